// benchmarks/src/run_report.cpp — a run's report files (run_report.hpp): above report.cpp (the
// Markdown and the scores) and report_html.cpp (the page), which it calls both.
#include "kforge/benchmarks/run_report.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/benchmarks/report_html.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
std::string incomplete_warning(const fs::path& run_dir, const RunInfo& info) {
  const std::string again = info.command == "eval"
                                ? "the same `kforge eval` command judges the rest"
                                : "`kforge run --resume " + run_dir.string() + "` continues it";
  return "INCOMPLETE: this run has not finished (interrupted, stopped, or episodes paused at an "
         "llm_error); the scores cover only the attempts made so far. " +
         again + ".";
}
}  // namespace

Summary write_report(const fs::path& run_dir, const MetricsConfig& config) {
  std::vector<AttemptRecord> records;
  Summary s = summarize_run(run_dir, config, &records);
  RunInfo info = read_run_info(run_dir, records);
  if (info.complete == false) s.warnings.insert(s.warnings.begin(), incomplete_warning(run_dir, info));
  json sj = to_json(s);
  sj["complete"] = info.complete ? json(*info.complete) : json(nullptr);
  sj["wall_s"] = info.wall_s;
  write_file(run_dir / "summary.json", dump_json(sj, 2) + "\n");
  std::string title = "kforge run report: " + info.name + (info.complete == false ? " (INCOMPLETE)" : "");
  write_file(run_dir / "report.md", render_report_md(s, title, &info));
  try {
    HtmlPage page = write_report_html(run_dir, s, info, records);
    if (!page.plots) spdlog::warn("{}: {}", page.path.string(), page.note);
  } catch (const std::exception& e) {
    // report.md and summary.json stand; a broken installation must not lose a finished run.
    spdlog::error("report.html not written: {}", e.what());
  }
  return s;
}

}  // namespace kforge
