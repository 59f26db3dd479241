// Tests of report.html / compare.html building (benchmarks/report_html) and of the report
// details issue 23 asks for: pass@k for every k up to the samples, fast_p unknown without
// timing, run settings and wall time, compare on common tasks with a per-task diff and the
// equal-budget points. The pages themselves are opened in a headless browser by the ctest
// `report_html_browser` (tests/tools/check_report_html.py).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/report_html.hpp"
#include "kforge/benchmarks/run_report.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

AttemptRecord rec(const std::string& task, int sample, int turn, Outcome o, double speedup = 0) {
  AttemptRecord r;
  r.task = task;
  r.category = "activation";
  r.sample = sample;
  r.turn = turn;
  r.backend = "cuda";
  r.model = "m";
  r.outcome = o;
  r.prompt_tokens = 100;
  r.completion_tokens = 50;
  if (speedup > 0) {
    r.speedup = speedup;
    r.t_reference_ms = 1.0;
    r.t_candidate_ms = 1.0 / speedup;
  }
  r.attempt_dir = attempt_rel_path(task, sample, turn).generic_string();
  return r;
}

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

/// The page's data blob, read back from the written HTML.
json page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"kf-data\">";
  auto a = html.find(open);
  REQUIRE(a != std::string::npos);
  a += open.size();
  auto b = html.find("</script>", a);
  REQUIRE(b != std::string::npos);
  return json::parse(html.substr(a, b - a));
}

}  // namespace

TEST_CASE("json_for_script: no string in the data can close or change the script element", "[report_html]") {
  json j{{"evil", "</script><script>alert(1)</script><!-- x"}, {"ok", "a < b"}};
  std::string s = json_for_script(j);
  CHECK_FALSE(has(s, "<"));
  CHECK(json::parse(s) == j);  // \u003c means '<' inside JSON strings
}

TEST_CASE("render_html_page fills each marker once and keeps the library inside its element",
          "[report_html]") {
  const std::string tmpl = "<title>@KF_TITLE@</title><script>@KF_CHARTJS@</script><script>@KF_DATA@</script>";
  json data{{"text", "@KF_TITLE@ and @KF_CHARTJS@"}};
  std::string page =
      render_html_page(tmpl, "a <b> & \"c\"", "var s = '</script>'; var t = '</SCRIPT x';", data);
  CHECK(has(page, "<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"));
  CHECK(has(page, "var s = '<\\/script>'; var t = '<\\/SCRIPT x';"));
  // The data's text holds marker names: they stay text (one pass).
  CHECK(has(page, "\"@KF_TITLE@ and @KF_CHARTJS@\""));
  // Exactly three </script> remain: the template's own.
  std::size_t n = 0;
  for (auto p = page.find("</script>"); p != std::string::npos; p = page.find("</script>", p + 1)) ++n;
  CHECK(n == 2);
  CHECK_THROWS_AS(render_html_page("<html>@KF_DATA@</html>", "t", "", data), std::runtime_error);
}

TEST_CASE("TextTable stores each line once and round-trips every text", "[report_html]") {
  TextTable tt;
  const std::string prompt = "line one\nline two\n\nline four\n";
  const std::vector<std::string> texts{prompt,           "", "single", "line two\nline one", "a\n\n\nb",
                                       prompt + "more\n"};
  std::vector<int> ids;
  for (const auto& t : texts) ids.push_back(tt.add(t, 1 << 20));
  for (std::size_t i = 0; i < texts.size(); ++i) CHECK(tt.text(static_cast<std::size_t>(ids[i])) == texts[i]);
  CHECK(tt.add(prompt, 1 << 20) == ids[0]);  // an identical text is stored once
  // prompt + "more\n": its first lines are a run of known ids: id, -n, then the new lines.
  const json& enc = tt.texts()[static_cast<std::size_t>(ids[5])];
  CHECK(enc.size() <= 4);
  std::size_t distinct = tt.lines().size();
  CHECK(distinct == 8);  // "line one", "line two", "", "line four", "single", "a", "b", "more"

  // A text over the limit keeps its head and tail and says how much was cut.
  std::string big(1000, 'x');
  big += "\nTAIL";
  std::string cut = tt.text(static_cast<std::size_t>(tt.add(big, 100)));
  CHECK(cut.size() < 200);
  CHECK(has(cut, "bytes cut"));
  CHECK(cut.substr(cut.size() - 4) == "TAIL");
}

TEST_CASE("pass@k for every k up to the samples; fast_p unknown when no pass was timed",
          "[report_html][metrics]") {
  std::vector<AttemptRecord> rs;
  for (int s = 0; s < 4; ++s)
    rs.push_back(rec("relu", s, 1, s == 0 ? Outcome::pass : Outcome::compile_error));
  Summary sm = summarize(rs);
  CHECK(sm.config.ks == std::vector<int>{1, 2, 3, 4});
  REQUIRE(sm.overall.best.pass_at_k.size() == 4);
  CHECK(sm.overall.best.pass_at_k.at(2) == Approx(0.5));  // 1 - C(3,2)/C(4,2)
  // The pass was not timed (--no-bench): how fast it is is unknown, not 0.
  CHECK(sm.overall.best.untimed);
  CHECK(sm.overall.best.fast_p.count(0.0) == 1);
  CHECK(sm.overall.best.fast_p.count(1.0) == 0);
  CHECK(sm.overall.best.speedup_at_k.empty());
  std::string md = render_report_md(sm);
  CHECK(has(md, "| best attempt | 1 | 4 | 0.250 | 0.250 | 0.500 | 0.750 | 1.000 | 1.000 | – | – | – |"));
  CHECK(has(md, "fast_p above 0 and SpeedUp_α@k are unknown"));
  CHECK(to_json(sm)["overall"]["best"]["untimed"] == true);

  // Timed: fast_1 is known again.
  rs[0].speedup = 1.5;
  rs[0].t_candidate_ms = 1;
  sm = summarize(rs);
  CHECK_FALSE(sm.overall.best.untimed);
  CHECK(sm.overall.best.fast_p.at(1.0) == 1.0);
  // Nothing correct: fast_p is a known 0.
  sm = summarize({rec("relu", 0, 1, Outcome::compile_error)});
  CHECK_FALSE(sm.overall.best.untimed);
  CHECK(sm.overall.best.fast_p.at(1.0) == 0.0);
}

TEST_CASE("report.md lists every k in its own table when there are more than ten samples", "[report_html]") {
  std::vector<AttemptRecord> rs;
  for (int s = 0; s < 12; ++s)
    rs.push_back(rec("relu", s, 1, s < 3 ? Outcome::pass : Outcome::output_mismatch, 1.2));
  Summary sm = summarize(rs);
  REQUIRE(sm.config.ks.size() == 12);
  std::string md = render_report_md(sm);
  CHECK(has(md, "## pass@k"));
  CHECK(has(md, "| 11 | "));
  CHECK(has(md, "pass@12"));          // the largest k stays in the wide tables
  CHECK_FALSE(has(md, "pass@11 |"));  // k = 11 only in the pass@k table
}

TEST_CASE("budget points: calls and tokens per task at each (k, turn)", "[report_html][metrics]") {
  // Sample 0: compile error, then a pass at turn 2. Sample 1: a pass at turn 1 and stops.
  // An llm_error asked again costs a call too.
  std::vector<AttemptRecord> rs{rec("relu", 0, 1, Outcome::compile_error),
                                rec("relu", 0, 2, Outcome::pass, 2.0), rec("relu", 1, 1, Outcome::llm_error),
                                rec("relu", 1, 1, Outcome::pass, 1.5)};
  Summary sm = summarize(rs);
  auto find = [&](int k, int t) -> const BudgetPoint& {
    for (const auto& p : sm.budget)
      if (p.samples == k && p.turn == t) return p;
    FAIL("no point k=" << k << " t=" << t);
    return sm.budget.front();
  };
  REQUIRE(sm.budget.size() == 4);
  // Turn 1: sample 0 made 1 call, sample 1 made 2 (the llm_error and its retry): mean 1.5.
  CHECK(find(1, 1).calls == Approx(1.5));
  CHECK(find(1, 1).tokens == Approx(225));
  CHECK(find(1, 1).pass == Approx(0.5));
  CHECK(find(1, 2).calls == Approx(2.0));  // (2 + 2) / 2
  CHECK(find(1, 2).pass == Approx(1.0));
  CHECK(find(2, 1).calls == Approx(3.0));
  CHECK(find(2, 1).pass == Approx(1.0));
  CHECK(to_json(sm)["budget"].size() == 4);
}

TEST_CASE("run info: settings from the manifest and wall time from the records", "[report_html]") {
  // date -u -d 2026-11-22T13:50:28Z +%s = 1795355428
  CHECK(parse_iso8601_utc("2026-11-22T13:50:28.123Z").value() == Approx(1795355428.123));
  CHECK_FALSE(parse_iso8601_utc("yesterday").has_value());
  CHECK_FALSE(parse_iso8601_utc("2026-11-22T13:50:28").has_value());
  const fs::path tmp = scratch("kforge_rinfo");
  write_file(tmp / "manifest.json",
             R"({"command":"run","config":{"samples":4,"tasks":["a","b"],"bench":false},"resumes":[{}],)"
             R"("runner":{"device_name":"NVIDIA H100"}})");
  auto a = rec("relu", 0, 1, Outcome::pass), b = rec("relu", 0, 2, Outcome::pass);
  a.started_at = "2026-11-22T10:00:00.000Z";
  a.finished_at = "2026-11-22T10:00:30.000Z";
  a.total_ms = 30000;
  b.started_at = "2026-11-22T10:59:00.000Z";
  b.finished_at = "2026-11-22T11:00:00.500Z";
  b.total_ms = 60500;
  RunInfo info = read_run_info(tmp, {b, a});
  CHECK(info.wall_s == Approx(3600.5));
  CHECK(info.attempts_s == Approx(90.5));
  CHECK(info.resumes == 1);
  CHECK(info.started_at == a.started_at);
  using KV = std::pair<std::string, std::string>;
  CHECK(info.settings ==
        std::vector<KV>{
            {"bench", "false"}, {"samples", "4"}, {"tasks", "a,b"}, {"device name", "NVIDIA H100"}});
  std::string md = render_report_md(summarize({a, b}), "t", &info);
  CHECK(has(md, "## Run"));
  CHECK(has(md, "Wall time 1 h 00 min"));
  CHECK(has(md, "resumed 1 time(s)"));
  CHECK(has(md, "| tasks | a,b |"));
}

TEST_CASE("compare: only common tasks, what was dropped, per-task diff, equal budget", "[report_html]") {
  const fs::path tmp = scratch("kforge_cmp");
  {
    RunDir a = RunDir::create(tmp / "iterative", json::object());
    a.append(rec("relu", 0, 1, Outcome::compile_error));
    a.append(rec("relu", 0, 2, Outcome::pass, 2.0));
    a.append(rec("gelu", 0, 1, Outcome::pass, 1.1));
    a.append(rec("only_a", 0, 1, Outcome::pass, 9.0));
    RunDir b = RunDir::create(tmp / "oneshot", json::object());
    b.append(rec("relu", 0, 1, Outcome::output_mismatch));
    b.append(rec("relu", 1, 1, Outcome::output_mismatch));
    b.append(rec("gelu", 0, 1, Outcome::pass, 1.3));
    b.append(rec("only_b1", 0, 1, Outcome::pass));
    b.append(rec("only_b2", 0, 1, Outcome::pass));
  }
  ComparedRuns c = compare_runs(tmp / "iterative", tmp / "oneshot");
  CHECK(c.common == 2);
  CHECK(c.only_a == std::vector<std::string>{"only_a"});
  CHECK(c.only_b == std::vector<std::string>{"only_b1", "only_b2"});
  CHECK(c.a.overall.best.tasks == 2);
  CHECK(c.b.overall.best.tasks == 2);
  auto notes = compare_drop_notes(c);
  REQUIRE(notes.size() == 2);
  CHECK(has(notes[0], "Dropped 1 task(s) only iterative attempted: only_a"));
  auto diffs = task_diffs(c);
  REQUIRE(diffs.size() == 2);
  CHECK(diffs[0].task == "gelu");
  CHECK(diffs[0].change == "both");
  CHECK(diffs[1].change == "lost");
  CHECK(diffs[1].b.samples == 2);
  std::string md = render_compare_md(c);
  INFO(md);
  CHECK(has(md, "Compared: the 2 task(s) both runs attempted."));
  CHECK(has(md, "**Warning: the task sets differ.**"));
  CHECK(has(md, "| relu | lost | 1/1 | 0/2 | 2.00x | – |"));
  CHECK(has(md, "## Equal budget"));
  CHECK(has(md, "| iterative | 1 | 2 | 1.50 | 225 | 1.000 |"));
  // The geomean is over common tasks only (only_a's 9x is gone).
  CHECK(has(md, "| geomean speedup | 1.48x (2) | 1.30x (1) |"));

  fs::path out = tmp / "cmp" / "compare.html";
  HtmlPage page = write_compare_html(c, out);
  REQUIRE(fs::exists(out));
  json d = page_data(read_file(out));
  CHECK(d["kind"] == "compare");
  CHECK(d["common"] == 2);
  CHECK(d["only"][1].size() == 2);
  CHECK(d["diffs"].size() == 2);
  CHECK(d["links"][0] == "");  // no report.html in the runs yet

  // Disjoint task sets: nothing compared, said plainly.
  {
    RunDir x = RunDir::create(tmp / "x", json::object());
    x.append(rec("other", 0, 1, Outcome::pass));
  }
  ComparedRuns none = compare_runs(tmp / "iterative", tmp / "x");
  CHECK(none.common == 0);
  CHECK(has(compare_drop_notes(none)[0], "no task in common"));
}

TEST_CASE("report.html of a run directory: trajectories with their files, and a page without Chart.js",
          "[report_html]") {
  const fs::path tmp = scratch("kforge_rhtml");
  fs::path run = tmp / "run";
  {
    RunDir rd = RunDir::create(run, {{"command", "run"}, {"config", {{"samples", 1}}}});
    auto r1 = rec("level1/19_ReLU", 0, 1, Outcome::compile_error);
    r1.sub_kind = "undeclared";
    auto r2 = rec("level1/19_ReLU", 0, 2, Outcome::pass, 1.7);
    r2.profile.findings.push_back({"dram", "DRAM throughput", 91, "%", "memory-bound", 1});
    rd.append(r1);
    rd.append(r2);
    rd.write_attempt_file(r1.task, 0, 1, "prompt.md", "# System\nwrite a kernel\n");
    rd.write_attempt_file(r1.task, 0, 1, "kernel.cu", "int a;\nint b;\n");
    rd.write_attempt_file(r1.task, 0, 1, "result.json",
                          R"({"message": "error: b undeclared </script>", "in_history": true})");
    rd.write_attempt_file(r1.task, 0, 1, "build.log", "nvcc: error\n");
    rd.write_attempt_file(r2.task, 0, 2, "prompt.md", "# System\nwrite a kernel\nprevious: int a;\n");
    rd.write_attempt_file(r2.task, 0, 2, "response.txt", "Here:\n```cuda\nint a;\nint c;\n```\n");
    rd.write_attempt_file(r2.task, 0, 2, "kernel.cu", "int a;\nint c;\n");
  }
  Summary s = write_report(run);
  const std::string html = read_file(run / "report.html");
  CHECK_FALSE(has(html, "@KF_"));
  CHECK(has(html, "<title>kforge run report: run</title>"));
  json d = page_data(html);
  CHECK(d["kind"] == "report");
  REQUIRE(d["episodes"].size() == 1);
  CHECK(d["episodes"][0]["a"].size() == 2);
  const json& a1 = d["attempts"][0];
  CHECK(a1["o"] == "compile_error");
  CHECK(a1["sk"] == "undeclared");
  CHECK(decode_text(d["lines"], d["texts"][a1["K"].get<std::size_t>()]) == "int a;\nint b;\n");
  CHECK(decode_text(d["lines"], d["texts"][a1["F"].get<std::size_t>()]) == "error: b undeclared </script>");
  CHECK(decode_text(d["lines"], d["texts"][a1["L"].get<std::size_t>()]) == "nvcc: error\n");
  const json& a2 = d["attempts"][1];
  CHECK(a2["sp"] == Approx(1.7));
  CHECK(a2["kn"] == "kernel.cu");
  CHECK(a2["pf"]["f"][0][0] == "DRAM throughput");
  CHECK(decode_text(d["lines"], d["texts"][a2["R"].get<std::size_t>()]) ==
        "Here:\n```cuda\nint a;\nint c;\n```\n");
  CHECK(d["summary"]["tasks"].size() == 1);
  CHECK(d["info"]["settings"][0][0] == "samples");

  // Without the charting library: the page is written, with its tables and a note.
  ::setenv("KFORGE_CHARTJS", (tmp / "missing.js").c_str(), 1);
  HtmlPage page =
      write_report_html(run, s, read_run_info(run, load_attempts(run).records), load_attempts(run).records);
  ::unsetenv("KFORGE_CHARTJS");
  CHECK_FALSE(page.plots);
  CHECK(has(page.note, "libjs-chart.js"));
  json d2 = page_data(read_file(run / "report.html"));
  CHECK(has(d2["charts_note"].get<std::string>(), "missing.js"));
}
