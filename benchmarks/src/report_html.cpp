#include "kforge/benchmarks/report_html.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <tuple>

#include "candidate_file.hpp"
#include "kforge/common/ascii.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path html_template_path() {
  return kforge_home() / "benchmarks" / "report" / "report.html.in";
}

fs::path chartjs_path() {
  if (const char* p = std::getenv("KFORGE_CHARTJS"); p && *p) return p;
  return "/usr/share/javascript/chart.js/chart.min.js";
}

std::string json_for_script(const json& j) {
  const std::string raw = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 64);
  for (char c : raw) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// The library's source with every "</script" (any case) broken as "<\/script".
std::string script_safe(const std::string& js) {
  std::string out;
  out.reserve(js.size());
  for (std::size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && i + 1 < js.size() && js[i + 1] == '/' && i + 8 <= js.size()) {
      if (ascii_lower(std::string_view(js).substr(i + 2, 6)) == "script") {
        out += "<\\/";
        ++i;
        continue;
      }
    }
    out += js[i];
  }
  return out;
}

}  // namespace

std::string render_html_page(const std::string& tmpl, const std::string& title, const std::string& chart_js,
                             const json& data) {
  const std::vector<std::pair<std::string, std::string>> fill{{"@KF_TITLE@", html_escape(title)},
                                                              {"@KF_CHARTJS@", script_safe(chart_js)},
                                                              {"@KF_DATA@", json_for_script(data)}};
  for (const auto& [marker, value] : fill)
    if (tmpl.find(marker) == std::string::npos)
      throw std::runtime_error("report template: marker " + marker + " missing");
  std::string out;
  out.reserve(tmpl.size() + chart_js.size() + 1024);
  std::size_t pos = 0;
  while (pos < tmpl.size()) {
    std::size_t next = std::string::npos;
    const std::pair<std::string, std::string>* hit = nullptr;
    for (const auto& f : fill) {
      auto p = tmpl.find(f.first, pos);
      if (p < next) {
        next = p;
        hit = &f;
      }
    }
    if (!hit) {
      out.append(tmpl, pos, std::string::npos);
      break;
    }
    out.append(tmpl, pos, next - pos);
    out += hit->second;
    pos = next + hit->first.size();
  }
  return out;
}

int TextTable::add(const std::string& text_in, std::size_t max_bytes) {
  std::string text = text_in;
  if (text.size() > max_bytes) {
    const std::size_t keep = max_bytes / 2;
    text = text.substr(0, keep) + "\n[... " + std::to_string(text_in.size() - 2 * keep) +
           " bytes cut ...]\n" + text.substr(text.size() - keep);
  }
  if (auto it = text_ids_.find(text); it != text_ids_.end()) return it->second;
  json enc = json::array();
  int prev = -2, run = 0;
  auto flush = [&] {
    if (run > 0) enc.push_back(-run);
    run = 0;
  };
  std::size_t start = 0;
  while (true) {
    std::size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    auto [it, fresh] = line_ids_.try_emplace(line, static_cast<int>(lines_.size()));
    if (fresh) lines_.push_back(line);
    const int id = it->second;
    if (id == prev + 1 && !enc.empty()) {
      ++run;
    } else {
      flush();
      enc.push_back(id);
    }
    prev = id;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  flush();
  const int idx = static_cast<int>(texts_.size());
  texts_.push_back(std::move(enc));
  text_ids_.emplace(std::move(text), idx);
  return idx;
}

std::string decode_text(const json& lines, const json& enc) {
  std::string out;
  int prev = 0;
  bool first = true;
  auto put = [&](int id) {
    if (!first) out += '\n';
    first = false;
    out += lines.at(static_cast<std::size_t>(id)).get<std::string>();
    prev = id;
  };
  for (const auto& v : enc) {
    const int x = v.get<int>();
    if (x < 0) {
      const int base = prev;
      for (int j = 1; j <= -x; ++j) put(base + j);
    } else {
      put(x);
    }
  }
  return out;
}

namespace {

/// A number rounded to 4 significant digits (the page shows 3): smaller JSON.
json num(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == 0) return 0;
  const double mag = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * mag) / mag;
}

std::string read_if(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "";
  try {
    return read_file(p);
  } catch (const std::exception&) {
    return "";
  }
}

/// The candidate source of an attempt directory and its file name: the one the record's
/// source_sha names first (candidate_file).
std::pair<std::string, std::string> kernel_file(const fs::path& dir, const std::string& source_sha) {
  CandidateFile f = candidate_file(dir, source_sha);
  if (f.path.empty()) return {"", ""};
  return {f.path.filename().string(), f.text.value_or("")};
}

json profile_json(const AttemptProfile& p) {
  json j = json::object();
  if (!p.bottleneck.empty()) j["b"] = p.bottleneck;
  if (!p.bottleneck_reason.empty()) j["br"] = p.bottleneck_reason;
  if (p.dram_fraction > 0) j["dram"] = num(p.dram_fraction);
  if (p.flops_fraction > 0) j["flops"] = num(p.flops_fraction);
  if (p.peak_gbps > 0) j["peak"] = {p.peaks_device, num(p.peak_gbps), num(p.peak_tflops)};
  if (!p.profiler.empty()) j["by"] = p.profiler;
  if (!p.profiler_note.empty()) j["note"] = p.profiler_note;
  json f = json::array();
  for (const auto& m : p.findings)
    f.push_back({m.label.empty() ? m.metric : m.label, num(m.value), m.unit, m.interpretation});
  if (!f.empty()) j["f"] = std::move(f);
  json rs = json::array();
  for (const auto& r : p.resources)
    rs.push_back({kernel_display_name(r.name), r.registers, r.spill_store_bytes, r.spill_load_bytes,
                  r.shared_static_bytes});
  if (!rs.empty()) j["rs"] = std::move(rs);
  json kt = json::array();
  for (const auto& k : p.candidate_kernels)
    kt.push_back({kernel_display_name(k.name), num(k.ms), k.launches});
  if (!kt.empty()) j["k"] = std::move(kt);
  return j;
}

/// One attempt of the viewer (short keys; fields at their defaults left out).
json attempt_json(const fs::path& run_dir, const AttemptRecord& r, TextTable& tt,
                  const TrajectoryLimits& lim) {
  json a{{"t", r.turn}, {"o", std::string(to_string(r.outcome))}};
  if (!r.sub_kind.empty()) a["sk"] = r.sub_kind;
  if (!r.message.empty()) a["m"] = r.message;
  if (!r.llm_status.empty() && r.llm_status != "ok") a["st"] = r.llm_status;
  a["ms"] = {num(r.llm_ms),   num(r.compile_ms),          num(r.check_ms),
             num(r.bench_ms), num(r.profile.profiler_ms), num(r.total_ms)};
  a["tk"] = {r.prompt_tokens, r.completion_tokens};
  if (r.cost_usd > 0) a["usd"] = num(r.cost_usd);
  if (r.compile_cached) a["cc"] = 1;
  if (r.trials > 0) a["tri"] = {r.trials_passed, r.trials};
  if (r.max_abs_err != 0 || r.tolerance_ratio != 0)
    a["err"] = {num(r.max_abs_err), num(r.max_rel_err), num(r.tolerance_ratio), num(r.mismatch_fraction)};
  if (r.speedup > 0) a["sp"] = num(r.speedup);
  if (r.has_speedup()) a["cr"] = 1;  // credited
  if (r.speedup_ci_high > 0) a["ci"] = {num(r.speedup_ci_low), num(r.speedup_ci_high)};
  if (r.t_candidate_ms > 0) a["tc"] = num(r.t_candidate_ms);
  if (r.t_reference_ms > 0) a["tr"] = num(r.t_reference_ms);
  if (r.achieved_gbps > 0) a["gbps"] = num(r.achieved_gbps);
  if (r.achieved_tflops > 0) a["tflops"] = num(r.achieved_tflops);
  if (!r.timing_anomaly.empty()) a["an"] = r.timing_anomaly;
  if (!r.precision.empty()) a["pr"] = r.precision;
  if (r.precision_disallowed) a["pd"] = 1;
  if (!r.error_group.empty()) a["eg"] = r.error_group;
  if (!r.started_at.empty()) a["at"] = r.started_at;
  if (json pf = profile_json(r.profile); !pf.empty()) a["pf"] = std::move(pf);

  // The canonical layout, not the record's attempt_dir: a record never points outside the run.
  fs::path dir;
  try {
    dir = run_dir / attempt_rel_path(r.task, r.sample, r.turn);
  } catch (const std::exception&) {
    return a;
  }
  if (std::string p = read_if(dir / "prompt.md"); !p.empty()) a["P"] = tt.add(p, lim.max_text_bytes);
  if (std::string t = read_if(dir / "response.txt"); !t.empty()) a["R"] = tt.add(t, lim.max_text_bytes);
  if (auto [name, src] = kernel_file(dir, r.source_sha); !name.empty()) {
    a["kn"] = name;
    a["K"] = tt.add(src, lim.max_text_bytes);
  }
  if (std::string log = read_if(dir / "build.log"); !log.empty()) a["L"] = tt.add(log, lim.max_log_bytes);
  if (std::string res = read_if(dir / "result.json"); !res.empty()) {
    json j = json::parse(res, nullptr, false);
    if (j.is_object()) {
      if (j.contains("message") && j["message"].is_string() && !j["message"].get<std::string>().empty())
        a["F"] = tt.add(j["message"].get<std::string>(), lim.max_text_bytes);
      if (j.contains("in_history") && j["in_history"].is_boolean() && !j["in_history"].get<bool>())
        a["nh"] = 1;
    }
  }
  return a;
}

json info_json(const RunInfo& info) {
  json settings = json::array();
  for (const auto& [k, v] : info.settings) settings.push_back({k, v});
  return {{"name", info.name},
          {"command", info.command},
          {"settings", settings},
          {"started_at", info.started_at},
          {"finished_at", info.finished_at},
          {"wall_s", info.wall_s},
          {"attempts_s", info.attempts_s},
          {"resumes", info.resumes},
          {"complete", info.complete ? json(*info.complete) : json(nullptr)},
          {"wall_from_manifest", info.wall_from_manifest},
          {"warnings", info.warnings}};
}

/// Chart.js's source, or "" with `note` saying why.
std::string load_chartjs(std::string& note) {
  const fs::path p = chartjs_path();
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    note = "No plots: the charting library " + p.string() +
           " is missing (Debian package libjs-chart.js; scripts/install-deps installs it). Rerun `kforge "
           "report` after installing it.";
    return "";
  }
  try {
    return read_file(p);
  } catch (const std::exception& e) {
    note = std::string("No plots: ") + e.what();
    return "";
  }
}

HtmlPage write_page(const fs::path& out, const std::string& title, json data) {
  HtmlPage page;
  page.path = out;
  const std::string tmpl = read_file(html_template_path());
  std::string js = load_chartjs(page.note);
  page.plots = !js.empty();
  data["charts_note"] = page.note;
  std::string html = render_html_page(tmpl, title, js, data);
  write_file(out, html);
  page.bytes = html.size();
  return page;
}

}  // namespace

json report_page_data(const fs::path& run_dir, const Summary& s, const RunInfo& info,
                      const std::vector<AttemptRecord>& records, const TrajectoryLimits& limits) {
  // The last record of each (backend, model, task, sample, turn), as summarize counts them.
  std::map<std::tuple<std::string, std::string, std::string, int, int>, const AttemptRecord*> last;
  for (const auto& r : records) last[{r.backend, r.model, r.task, r.sample, r.turn}] = &r;
  std::map<std::tuple<std::string, std::string, std::string>, int> task_index;
  for (std::size_t i = 0; i < s.tasks.size(); ++i)
    task_index[{s.tasks[i].backend, s.tasks[i].model, s.tasks[i].task}] = static_cast<int>(i);

  TextTable tt;
  json attempts = json::array(), episodes = json::array(), extra_tasks = json::array();
  json* ep = nullptr;
  std::tuple<std::string, std::string, std::string, int> cur;
  for (const auto& [key, r] : last) {
    const auto& [backend, model, task, sample, turn] = key;
    std::tuple<std::string, std::string, std::string, int> ek{backend, model, task, sample};
    if (!ep || ek != cur) {
      cur = ek;
      auto ti = task_index.find({backend, model, task});
      int idx;
      if (ti == task_index.end()) {
        // A task with only llm_error / infra_error records: not scored, still shown.
        idx = static_cast<int>(s.tasks.size() + extra_tasks.size());
        task_index[{backend, model, task}] = idx;
        extra_tasks.push_back({{"task", task},
                               {"category", r->category},
                               {"backend", backend},
                               {"model", model},
                               {"difficulty", r->difficulty},
                               {"unscored", true}});
      } else {
        idx = ti->second;
      }
      episodes.push_back({{"ti", idx}, {"s", sample}, {"a", json::array()}});
      ep = &episodes.back();
    }
    (*ep)["a"].push_back(attempts.size());
    attempts.push_back(attempt_json(run_dir, *r, tt, limits));
  }
  json data{{"kind", "report"},
            {"title", "kforge run report: " + info.name},
            {"info", info_json(info)},
            {"summary", to_json(s)},
            {"extra_tasks", extra_tasks},
            {"episodes", episodes},
            {"attempts", attempts},
            {"lines", tt.lines()},
            {"texts", tt.texts()},
            {"limits", {{"max_text_bytes", limits.max_text_bytes}, {"max_log_bytes", limits.max_log_bytes}}}};
  return data;
}

json compare_page_data(const ComparedRuns& c, const fs::path& out_dir) {
  auto link = [&](const fs::path& run) -> std::string {
    std::error_code ec;
    fs::path html = fs::absolute(run / "report.html", ec);
    if (ec || !fs::is_regular_file(html, ec)) return "";
    fs::path rel = html.lexically_relative(fs::absolute(out_dir, ec));
    return rel.empty() ? html.generic_string() : rel.generic_string();
  };
  json diffs = json::array();
  for (const auto& d : task_diffs(c)) {
    auto side = [](const TaskDiff::Side& s) {
      return json{s.samples, s.passed_samples, s.first_pass_turn, num(s.best_speedup)};
    };
    diffs.push_back({{"task", d.task},
                     {"category", d.category},
                     {"change", d.change},
                     {"a", side(d.a)},
                     {"b", side(d.b)}});
  }
  return {{"kind", "compare"},
          {"title", "kforge compare: " + c.name_a + " vs " + c.name_b},
          {"names", {c.name_a, c.name_b}},
          {"info", {info_json(c.info_a), info_json(c.info_b)}},
          {"summaries", {to_json(c.a), to_json(c.b)}},
          {"common", c.common},
          {"only", {c.only_a, c.only_b}},
          {"notes", compare_drop_notes(c)},
          {"not_alike", c.not_alike},
          {"diffs", diffs},
          {"links", {link(c.dir_a), link(c.dir_b)}}};
}

HtmlPage write_report_html(const fs::path& run_dir, const Summary& s, const RunInfo& info,
                           const std::vector<AttemptRecord>& records) {
  return write_page(run_dir / "report.html", "kforge run report: " + info.name,
                    report_page_data(run_dir, s, info, records));
}

HtmlPage write_compare_html(const ComparedRuns& c, const fs::path& out) {
  fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  return write_page(out, "kforge compare: " + c.name_a + " vs " + c.name_b, compare_page_data(c, dir));
}

}  // namespace kforge
