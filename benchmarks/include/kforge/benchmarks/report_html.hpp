// kforge/benchmarks/report_html.hpp — report.html and compare.html: one self-contained page each
// (opens from disk, offline: no server, no network), holding the tables of report.md / compare,
// plots drawn by Chart.js (Debian's libjs-chart.js, inlined into the file at report time) and,
// for a run, a trajectory viewer (every episode's turns: prompt, reply, kernel with its diff
// against the previous turn's, verdict, feedback, profile findings, timings, tokens).
//
// The page is benchmarks/report/report.html.in (HTML, CSS and the script that feeds the charts
// and renders the tables lazily) with three markers filled here: @KF_TITLE@, @KF_CHARTJS@ and
// @KF_DATA@, the last one JSON (one blob) in a <script type="application/json"> element. Texts of
// the attempt files go in through a line table: each distinct line once, each text a list of
// line ids where a negative entry -n means "the next n ids follow" (a repeated prompt costs a
// few numbers). A text longer than TrajectoryLimits::max_text_bytes keeps its head and tail.
// Where Chart.js is missing the page still has its tables and says why there are no plots.
//
// The page writes its own state into <div id="kf-status"> once drawn (data-plots-expected,
// data-plots-drawn, data-errors, data-selftest, data-load-ms): tests read it from a headless
// browser's DOM.
//
// Functions are pure except write_*, which read a run's attempt files and write one file.
// Thread-safe on distinct outputs.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/benchmarks/report.hpp"

namespace kforge {

/// The page template: $KFORGE_HOME/benchmarks/report/report.html.in.
std::filesystem::path html_template_path();

/// Chart.js's UMD build: $KFORGE_CHARTJS when set, else Debian's
/// /usr/share/javascript/chart.js/chart.min.js (package libjs-chart.js).
std::filesystem::path chartjs_path();

/// JSON text safe inside a <script> element: every '<' written as \u003c (it only occurs inside
/// JSON strings, where the escape means the same), so no "</script>" or "<!--" can end or
/// change the element.
std::string json_for_script(const nlohmann::json& j);

/// The template with its markers filled: @KF_TITLE@ (HTML-escaped), @KF_CHARTJS@ (the library's
/// source, any "</script" in it written as "<\/script"; "" = no library) and @KF_DATA@
/// (json_for_script). One pass: text inside the filled values is never substituted again.
/// Throws std::runtime_error when the template lacks a marker.
std::string render_html_page(const std::string& tmpl, const std::string& title, const std::string& chart_js,
                             const nlohmann::json& data);

/// One text of a page's line table: `enc` (a list of line ids, -n = the next n ids) over `lines`
/// (what the page's script does). Throws nlohmann::json::exception on a malformed table.
std::string decode_text(const nlohmann::json& lines, const nlohmann::json& enc);

/// The line table of a page's texts (see the header comment). Not thread-safe.
class TextTable {
 public:
  /// Adds a text (cut to max_bytes: head and tail around a "[... N bytes cut ...]" line) and
  /// returns its index in texts(); an identical text returns the earlier index.
  int add(const std::string& text, std::size_t max_bytes);
  const nlohmann::json& lines() const { return lines_; }
  const nlohmann::json& texts() const { return texts_; }
  /// Decodes text `i` (decode_text).
  std::string text(std::size_t i) const { return decode_text(lines_, texts_.at(i)); }

 private:
  std::map<std::string, int> line_ids_;
  std::map<std::string, int> text_ids_;
  nlohmann::json lines_ = nlohmann::json::array();
  nlohmann::json texts_ = nlohmann::json::array();
};

struct TrajectoryLimits {
  std::size_t max_text_bytes = 64 * 1024;  ///< prompt, reply, kernel, feedback
  std::size_t max_log_bytes = 8 * 1024;    ///< build.log
};

/// The data blob of a run's report.html: the summary (to_json), the run's settings and wall
/// time, every episode and attempt (the last record of each (backend, model, task, sample,
/// turn), as the scores count them) with the texts of its attempt directory.
nlohmann::json report_page_data(const std::filesystem::path& run_dir, const Summary& s, const RunInfo& info,
                                const std::vector<AttemptRecord>& records,
                                const TrajectoryLimits& limits = {});

/// The data blob of compare.html: both summaries of the common tasks, the dropped tasks, the
/// per-task diff, the repair curves and equal-budget points; links to each run's report.html
/// (relative to `out_dir`) where it exists.
nlohmann::json compare_page_data(const ComparedRuns& c, const std::filesystem::path& out_dir);

/// A written page.
struct HtmlPage {
  std::filesystem::path path;
  std::size_t bytes = 0;
  bool plots = false;  ///< Chart.js was found and inlined
  std::string note;    ///< why there are no plots ("" when there are)
};

/// Writes <run_dir>/report.html. Throws std::runtime_error when the template cannot be read
/// (a broken installation) or the file cannot be written.
HtmlPage write_report_html(const std::filesystem::path& run_dir, const Summary& s, const RunInfo& info,
                           const std::vector<AttemptRecord>& records);

/// Writes compare.html at `out`. Throws as write_report_html.
HtmlPage write_compare_html(const ComparedRuns& c, const std::filesystem::path& out);

}  // namespace kforge
