// Tests of benchmarks/ metrics and reports: pass@k, repair curve, final vs best scoring, fast_p,
// SpeedUp_α@k, geomean, histograms, cuts, report.md, compare, library export.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/benchmarks/operators.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/run_report.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

bool near(double a, double b, double tol = 1e-12) {
  return std::fabs(a - b) <= tol;
}

/// Exact C(n, k) for small n.
double choose(int n, int k) {
  if (k < 0 || k > n) return 0;
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return std::round(r);
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kforge_metrics_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

AttemptRecord att(const std::string& task, int sample, int turn, Outcome o, double speedup = 0,
                  const std::string& category = "activation", int difficulty = 1) {
  AttemptRecord r;
  r.task = task;
  r.category = category;
  r.difficulty = difficulty;
  r.sample = sample;
  r.turn = turn;
  r.backend = "cuda";
  r.model = "m";
  r.outcome = o;
  r.speedup = speedup;
  if (speedup > 0) {
    r.t_reference_ms = 1.0;
    r.t_candidate_ms = 1.0 / speedup;
  }
  r.attempt_dir = attempt_rel_path(task, sample, turn).generic_string();
  return r;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("pass@k matches hand-computed values", "[metrics]") {
  CHECK(near(pass_at_k(10, 3, 1), 0.3));
  CHECK(near(pass_at_k(10, 3, 5), 1.0 - 21.0 / 252.0));
  CHECK(near(pass_at_k(10, 3, 10), 1.0));
  CHECK(near(pass_at_k(10, 0, 1), 0.0));
  CHECK(near(pass_at_k(10, 0, 10), 0.0));
  CHECK(near(pass_at_k(10, 10, 1), 1.0));
  CHECK(near(pass_at_k(1, 1, 1), 1.0));
  CHECK(near(pass_at_k(1, 0, 1), 0.0));
  CHECK(near(pass_at_k(4, 1, 2), 0.5));  // 1 - C(3,2)/C(4,2) = 1 - 3/6
  // n - c < k: every k-subset holds a success.
  CHECK(pass_at_k(10, 8, 5) == 1.0);
  CHECK(pass_at_k(5, 1, 5) == 1.0);
  // Agrees with the binomial definition everywhere on small n.
  for (int n = 1; n <= 14; ++n)
    for (int c = 0; c <= n; ++c)
      for (int k = 1; k <= n; ++k) {
        double exact = 1.0 - choose(n - c, k) / choose(n, k);
        INFO("n=" << n << " c=" << c << " k=" << k);
        CHECK(near(pass_at_k(n, c, k), exact, 1e-12));
      }
  // Stable for large n where C(n, k) overflows a double.
  double big = pass_at_k(2000, 1, 1000);
  CHECK(near(big, 0.5, 1e-12));
  CHECK(std::isfinite(pass_at_k(5000, 2500, 2500)));
}

TEST_CASE("pass@k rejects impossible arguments", "[metrics]") {
  CHECK_THROWS_AS(pass_at_k(5, 2, 6), std::invalid_argument);   // k > n
  CHECK_THROWS_AS(pass_at_k(5, 6, 1), std::invalid_argument);   // c > n
  CHECK_THROWS_AS(pass_at_k(5, 2, 0), std::invalid_argument);   // k < 1
  CHECK_THROWS_AS(pass_at_k(5, -1, 1), std::invalid_argument);  // c < 0
  CHECK_THROWS_AS(pass_at_k(0, 0, 1), std::invalid_argument);   // no samples
}

TEST_CASE("repair curve: a sample that passes at turn 3 scores 0, 0, 1", "[metrics]") {
  std::vector<AttemptRecord> rs{
      att("relu", 0, 1, Outcome::compile_error),
      att("relu", 0, 2, Outcome::output_mismatch),
      att("relu", 0, 3, Outcome::pass, 1.5),
  };
  rs[0].sub_kind = "syntax";
  rs[1].sub_kind = "values";
  Summary s = summarize(rs);
  REQUIRE(s.max_turn == 3);
  REQUIRE(s.overall.by_turn.size() == 3);
  CHECK(s.overall.by_turn[0].pass_at_k.at(1) == 0.0);
  CHECK(s.overall.by_turn[1].pass_at_k.at(1) == 0.0);
  CHECK(s.overall.by_turn[2].pass_at_k.at(1) == 1.0);
  // compile@1 climbs one turn earlier.
  CHECK(s.overall.by_turn[0].compile_at_k.at(1) == 0.0);
  CHECK(s.overall.by_turn[1].compile_at_k.at(1) == 1.0);
  CHECK(s.overall.by_turn[2].fast_p.at(1.0) == 1.0);
  CHECK(s.overall.by_turn[1].fast_p.at(0.0) == 0.0);
  // Only k <= n appears: one sample, so only k = 1.
  CHECK(s.overall.best.pass_at_k.size() == 1);
  CHECK(s.overall.best.pass_at_k.at(1) == 1.0);
  REQUIRE(s.tasks.size() == 1);
  CHECK(s.tasks[0].first_pass_turn == 3);
  CHECK(near(s.tasks[0].best_speedup(), 1.5));
  // Outcome histogram with sub-kinds.
  const auto& oc = s.overall.stats.outcomes;
  CHECK(oc.at("compile_error").at("syntax") == 1);
  CHECK(oc.at("output_mismatch").at("values") == 1);
  CHECK(oc.at("pass").at("") == 1);
  CHECK(s.overall.stats.compiled == 2);
  CHECK(s.overall.stats.ran == 2);
  CHECK(s.overall.stats.passed == 1);
}

TEST_CASE("TritonBench's figures twice: correct counts a right torch_fallback, pass does not", "[metrics]") {
  std::vector<AttemptRecord> rs{
      att("a", 0, 1, Outcome::pass, 1.5),      att("b", 0, 1, Outcome::torch_fallback),
      att("c", 0, 1, Outcome::torch_fallback), att("d", 0, 1, Outcome::output_mismatch),
      att("e", 0, 1, Outcome::runtime_error),
  };
  rs[1].correct = true;  // its outputs matched: TritonBench would count it
  rs[3].correct = true;  // not a torch_fallback: the outcome says it is wrong
  const auto& st = summarize(rs).overall.stats;
  CHECK(st.attempts == 5);
  CHECK(st.ran == 4);
  CHECK(st.ran_native == 2);
  CHECK(st.correct == 2);
  CHECK(st.passed == 1);
  CHECK(near(st.call_accuracy(), 0.8));
  CHECK(near(st.call_accuracy_native(), 0.4));
  CHECK(near(st.exec_accuracy_correct(), 0.4));
  CHECK(near(st.exec_accuracy(), 0.2));
}

TEST_CASE("final-attempt and best-attempt scoring differ when a later turn regresses", "[metrics]") {
  // Sample 0 passes at turn 2 (2.0x) and breaks its kernel at turn 3; sample 1 passes only at
  // turn 3 (1.2x); sample 2 never passes.
  std::vector<AttemptRecord> rs{
      att("gelu", 0, 1, Outcome::output_mismatch), att("gelu", 0, 2, Outcome::pass, 2.0),
      att("gelu", 0, 3, Outcome::runtime_error),   att("gelu", 1, 1, Outcome::compile_error),
      att("gelu", 1, 2, Outcome::compile_error),   att("gelu", 1, 3, Outcome::pass, 1.2),
      att("gelu", 2, 1, Outcome::format_error),    att("gelu", 2, 2, Outcome::timeout),
      att("gelu", 2, 3, Outcome::output_mismatch),
  };
  Summary s = summarize(rs);
  const Slice& all = s.overall;
  CHECK(near(all.best.pass_at_k.at(1), 2.0 / 3.0));
  CHECK(near(all.final_attempt.pass_at_k.at(1), 1.0 / 3.0));
  // Best scoring uses the 2.0x kernel; final scoring only has the 1.2x one.
  CHECK(near(all.best.geomean_speedup, 2.0));
  CHECK(near(all.final_attempt.geomean_speedup, 1.2));
  CHECK(all.best.fast_p.at(1.5) == 1.0);
  CHECK(all.final_attempt.fast_p.at(1.5) == 0.0);
  CHECK(all.final_attempt.fast_p.at(1.0) == 1.0);
  // Repair curve: turn 1 none, turn 2 one of three, turn 3 two of three.
  CHECK(all.by_turn[0].pass_at_k.at(1) == 0.0);
  CHECK(near(all.by_turn[1].pass_at_k.at(1), 1.0 / 3.0));
  CHECK(near(all.by_turn[2].pass_at_k.at(1), 2.0 / 3.0));
  // compile@1: samples 0 (turn 1) and 2 (turn 2: timeout counts as compiled) vs sample 1 at turn 3.
  CHECK(near(all.by_turn[0].compile_at_k.at(1), 1.0 / 3.0));
  CHECK(near(all.by_turn[1].compile_at_k.at(1), 2.0 / 3.0));
  CHECK(near(all.by_turn[2].compile_at_k.at(1), 1.0));
  REQUIRE(s.tasks.size() == 1);
  const TaskResult& t = s.tasks[0];
  CHECK(t.samples == 3);
  CHECK(t.passed_samples == 2);
  CHECK(t.final_passed_samples == 1);
  CHECK(t.first_pass_turn == 2);
  REQUIRE(t.best);
  CHECK(t.best->sample == 0);
  CHECK(t.best->turn == 2);
}

TEST_CASE("fast_p, SpeedUp_a@k and geomean on known speedups", "[metrics]") {
  // Tasks: a best 0.5x; b samples 1.2x and 0.9x; c 2.5x; d never correct; e correct but not
  // benchmarked.
  std::vector<AttemptRecord> rs{
      att("a", 0, 1, Outcome::pass, 0.5),     att("a", 1, 1, Outcome::output_mismatch),
      att("b", 0, 1, Outcome::pass, 1.2),     att("b", 1, 1, Outcome::pass, 0.9),
      att("c", 0, 1, Outcome::pass, 2.5),     att("c", 1, 1, Outcome::compile_error),
      att("d", 0, 1, Outcome::runtime_error), att("d", 1, 1, Outcome::output_mismatch),
      att("e", 0, 1, Outcome::pass, 0.0),     att("e", 1, 1, Outcome::pass, 0.0),
  };
  Summary s = summarize(rs);
  const Scores& b = s.overall.best;
  CHECK(b.tasks == 5);
  CHECK(b.episodes == 10);
  CHECK(b.correct_tasks == 4);
  CHECK(near(b.fast_p.at(0.0), 4.0 / 5));
  CHECK(near(b.fast_p.at(1.0), 2.0 / 5));  // b, c
  CHECK(near(b.fast_p.at(1.5), 1.0 / 5));  // c
  CHECK(near(b.fast_p.at(2.0), 1.0 / 5));  // c
  CHECK(b.speedup_tasks == 3);
  CHECK(near(b.geomean_speedup, std::cbrt(0.5 * 1.2 * 2.5), 1e-12));
  // SpeedUp_1@1: c_1 per task = a 0, b 1, c 1, d 0, e 0; n = 2 -> (0 + .5 + .5) / 5.
  CHECK(near(b.speedup_at_k.at(1.0).at(1), 0.2));
  // SpeedUp_2@1: only c -> 0.5 / 5.
  CHECK(near(b.speedup_at_k.at(2.0).at(1), 0.1));
  // pass@1: a .5, b 1, c .5, d 0, e 1 -> 3/5. pass@5 absent (n = 2).
  CHECK(near(b.pass_at_k.at(1), 0.6));
  CHECK(b.pass_at_k.count(5) == 0);
  // compile@1: a 1, b 1, c .5, d 1, e 1.
  CHECK(near(b.compile_at_k.at(1), 0.9));
}

TEST_CASE("fast_p from intervals, the timing noise, and impossible speedups not credited", "[metrics]") {
  // a: 1.3x with interval [1.1, 1.5] clears 1; b: 1.3x with [0.9, 1.7] does not; c: 3x but a
  // timing anomaly; d: 2.2x, interval not recorded (never confident).
  std::vector<AttemptRecord> rs{att("a", 0, 1, Outcome::pass, 1.3), att("b", 0, 1, Outcome::pass, 1.3),
                                att("c", 0, 1, Outcome::pass, 3.0), att("d", 0, 1, Outcome::pass, 2.2)};
  rs[0].speedup_ci_low = 1.1;
  rs[0].speedup_ci_high = 1.5;
  rs[1].speedup_ci_low = 0.9;
  rs[1].speedup_ci_high = 1.7;
  rs[2].speedup_ci_low = 2.9;
  rs[2].speedup_ci_high = 3.1;
  rs[2].timing_anomaly = "faster than writing its outputs allows";
  CHECK_FALSE(rs[2].has_speedup());
  Summary s = summarize(rs);
  const Scores& b = s.overall.best;
  CHECK(near(b.fast_p.at(1.0), 3.0 / 4));  // a, b, d (c not credited)
  CHECK(near(b.fast_p.at(2.0), 1.0 / 4));  // d
  CHECK(near(b.fast_p_confident.at(0.0), 1.0));
  CHECK(near(b.fast_p_confident.at(1.0), 1.0 / 4));  // a only
  CHECK(near(b.fast_p_confident.at(2.0), 0.0));
  CHECK(s.timing_anomalies == 1);
  // Half-widths relative to the speedup: a 0.2/1.3, b 0.4/1.3 -> median of two = the upper one.
  CHECK(near(s.speedup_ci_rel_halfwidth, 0.4 / 1.3, 1e-12));
  auto j = to_json(s);
  CHECK(j["timing_anomalies"] == 1);
  CHECK(j["overall"]["best"]["fast_p_confident"]["1"] == 0.25);
  // The record's fields survive attempts.jsonl.
  auto back = attempt_from_json(to_json(rs[2]));
  CHECK(back.timing_anomaly == rs[2].timing_anomaly);
  CHECK(back.speedup_ci_low == 2.9);
  CHECK(back.speedup_ci_high == 3.1);
  const std::string md = render_report_md(s);
  CHECK(contains(md, "Timing anomalies"));
  CHECK(contains(md, "Timing noise"));
}

TEST_CASE("pass@k averages only over tasks with n >= k", "[metrics]") {
  std::vector<AttemptRecord> rs;
  for (int i = 0; i < 10; ++i)  // x: 10 samples, 3 pass
    rs.push_back(att("x", i, 1, i < 3 ? Outcome::pass : Outcome::output_mismatch));
  for (int i = 0; i < 2; ++i)  // y: 2 samples, 0 pass
    rs.push_back(att("y", i, 1, Outcome::output_mismatch));
  Summary s = summarize(rs);
  const Scores& b = s.overall.best;
  CHECK(near(b.pass_at_k.at(1), (0.3 + 0.0) / 2));
  CHECK(near(b.pass_at_k.at(5), 1.0 - 21.0 / 252.0));  // only x has n >= 5
  CHECK(near(b.pass_at_k.at(10), 1.0));
}

TEST_CASE("cuts, usage, phase times and duplicates", "[metrics]") {
  std::vector<AttemptRecord> rs{
      att("act/relu", 0, 1, Outcome::pass, 2.0, "activation", 1),
      att("mm/gemm", 0, 1, Outcome::compile_error, 0, "matmul", 3),
      att("mm/gemm", 0, 2, Outcome::pass, 0.5, "matmul", 3),
      att("red/sum", 0, 1, Outcome::output_mismatch, 0, "reduce", 0),
  };
  rs[0].llm_ms = 1000;
  rs[1].llm_ms = 3000;
  rs[1].compile_ms = 500;
  rs[0].prompt_tokens = 100;
  rs[0].completion_tokens = 50;
  rs[1].prompt_tokens = 200;
  rs[0].cost_usd = 0.01;
  rs[1].cost_usd = 0.02;
  rs[2].compile_cached = true;
  // A duplicate of red/sum 0/1 recorded later: it wins, with a warning.
  AttemptRecord dup = att("red/sum", 0, 1, Outcome::pass, 1.0, "reduce", 0);
  rs.push_back(dup);

  Summary s = summarize(rs);
  CHECK(s.attempts == 5);
  REQUIRE(s.warnings.size() == 1);
  CHECK(contains(s.warnings[0], "duplicate"));
  CHECK(s.overall.stats.attempts == 4);
  CHECK(s.overall.stats.outcomes.count("output_mismatch") == 0);
  CHECK(s.overall.best.correct_tasks == 3);

  const auto& cats = s.cuts.at("category");
  REQUIRE(cats.size() == 3);
  CHECK(cats[0].value == "activation");
  CHECK(cats[1].value == "matmul");
  CHECK(cats[1].max_turn == 2);
  CHECK(cats[1].by_turn[0].pass_at_k.at(1) == 0.0);
  CHECK(cats[1].by_turn[1].pass_at_k.at(1) == 1.0);
  CHECK(near(cats[1].best.geomean_speedup, 0.5));
  CHECK(near(cats[0].best.geomean_speedup, 2.0));
  const auto& diffs = s.cuts.at("difficulty");
  REQUIRE(diffs.size() == 3);
  CHECK(diffs[0].value == "1");
  CHECK(diffs[1].value == "3");
  CHECK(diffs[2].value == "unknown");
  REQUIRE(s.cuts.at("backend").size() == 1);
  CHECK(s.cuts.at("backend")[0].value == "cuda");
  CHECK(s.cuts.at("model")[0].best.tasks == 3);

  const AttemptStats& st = s.overall.stats;
  CHECK(st.prompt_tokens == 300);
  CHECK(st.completion_tokens == 50);
  CHECK(near(st.cost_usd, 0.03));
  CHECK(st.llm.count == 2);
  CHECK(near(st.llm.sum_ms, 4000));
  CHECK(near(st.llm.mean_ms(), 2000));
  CHECK(st.compile.count == 1);
  CHECK(st.compile_cached == 1);
  CHECK(near(s.overall.best.geomean_speedup, std::cbrt(2.0 * 0.5 * 1.0)));

  // summary.json carries the same numbers under string keys.
  auto j = to_json(s);
  CHECK(j["overall"]["best"]["pass_at_k"]["1"] == 1.0);
  CHECK(j["overall"]["best"]["fast_p"].contains("1.5"));
  CHECK(j["cuts"]["category"].size() == 3);
  CHECK(j["overall"]["by_turn"][0]["turn"] == 1);
  CHECK(j["overall"]["attempts"]["outcomes"]["pass"]["count"] == 3);
  CHECK(j["tasks"].size() == 3);
  CHECK(j["warnings"].size() == 1);
}

TEST_CASE("an empty run scores zeros and renders", "[metrics]") {
  Summary s = summarize({});
  CHECK(s.overall.best.tasks == 0);
  CHECK(s.overall.best.pass_at_k.empty());
  CHECK(s.overall.by_turn.empty());
  std::string md = render_report_md(s);
  CHECK(contains(md, "0 attempts"));
  CHECK_THROWS_AS(summarize({}, MetricsConfig{{0}, {}, {}}), std::invalid_argument);
}

TEST_CASE("report.md and compare show the expected numbers", "[metrics]") {
  std::vector<AttemptRecord> a{
      att("relu", 0, 1, Outcome::compile_error),
      att("relu", 0, 2, Outcome::output_mismatch),
      att("relu", 0, 3, Outcome::pass, 1.5),
      att("gelu", 0, 1, Outcome::pass, 2.5),
  };
  a[0].sub_kind = "undeclared";
  Summary sa = summarize(a);
  std::string md = render_report_md(sa, "My run");
  INFO(md);
  CHECK(contains(md, "# My run"));
  CHECK(contains(md, "## Headline"));
  CHECK(contains(md, "## Repair curve"));
  CHECK(contains(md, "## By category"));
  CHECK(contains(md, "## By difficulty"));
  CHECK(contains(md, "## Outcomes"));
  CHECK(contains(md, "| best attempt | 2 | 2 | 1.000 | 1.000 |"));
  // Repair curve: pass@1 0.500 at turns 1-2, 1.000 at turn 3.
  CHECK(contains(md, "| 1 | 2 | 2 | 0.500 | 0.500 |"));
  CHECK(contains(md, "| 2 | 2 | 2 | 1.000 | 0.500 |"));
  CHECK(contains(md, "| 3 | 2 | 2 | 1.000 | 1.000 |"));
  CHECK(contains(md, "1.94x (2)"));  // sqrt(1.5 * 2.5) = 1.936
  CHECK(contains(md, "| compile_error | (all) | 1 | 25.0% |"));
  CHECK(contains(md, "|  | undeclared | 1 | 25.0% |"));
  CHECK(contains(md, "| relu |"));
  CHECK(contains(md, "1.50x"));

  std::vector<AttemptRecord> b{att("relu", 0, 1, Outcome::pass, 3.0),
                               att("gelu", 0, 1, Outcome::output_mismatch)};
  Summary sb = summarize(b);
  std::string cmp = render_compare(sa, sb, "iterative", "oneshot");
  INFO(cmp);
  CHECK(contains(cmp, "# Compare: iterative vs oneshot"));
  CHECK(contains(cmp, "| pass@1 (best attempt) | 1.000 | 0.500 | -0.500 |"));
  CHECK(contains(cmp, "| fast_2 | 0.500 | 0.500 | +0.000 |"));
  CHECK(contains(cmp, "| geomean speedup | 1.94x (2) | 3.00x (1) | 1.55x (B/A) |"));
  // Repair curve past B's single turn keeps B's final value.
  CHECK(contains(cmp, "| 3 | 1.000 | 0.500 |"));
}

TEST_CASE("write_report and export_library on a run directory", "[metrics]") {
  TempDir tmp;
  fs::path run = tmp.path / "run";
  {
    RunDir rd = RunDir::create(run, {{"config", {{"suite", "test"}}}});
    auto a1 = att("level1/19_ReLU", 0, 1, Outcome::pass, 1.1);
    auto a2 = att("level1/19_ReLU", 1, 1, Outcome::pass, 1.8);
    auto a3 = att("level1/20_Gelu", 0, 1, Outcome::pass, 0.7);  // source file missing
    auto a4 = att("level2/1_Conv", 0, 1, Outcome::compile_error);
    for (const auto& r : {a1, a2, a3, a4}) rd.append(r);
    rd.write_attempt_file(a1.task, 0, 1, "kernel.cu", "// slower\n");
    rd.write_attempt_file(a2.task, 1, 1, "kernel.cu", "// faster\n");
    rd.write_attempt_file(a2.task, 1, 1, "result.json", "{\"speedup\": 1.8}\n");
    rd.write_attempt_file(a4.task, 0, 1, "kernel.cu", "broken");
  }
  Summary s = write_report(run);
  CHECK(s.overall.best.tasks == 3);
  auto sj = nlohmann::json::parse(read_file(run / "summary.json"));
  CHECK(near(sj["overall"]["best"]["pass_at_k"]["1"].get<double>(), 2.0 / 3.0));
  std::string md = read_file(run / "report.md");
  CHECK(contains(md, "0.667"));
  CHECK(contains(md, "1.80x"));

  // A stale entry from an earlier export disappears.
  write_file(run / "library/stale/kernel.cu", "old");
  LibraryExport ex = export_library(run);
  CHECK(ex.exported == 1);
  REQUIRE(ex.missing.size() == 1);
  CHECK(contains(ex.missing[0], "level1/20_Gelu"));
  CHECK(read_file(run / "library/level1/19_ReLU/kernel.cu") == "// faster\n");
  CHECK(fs::exists(run / "library/level1/19_ReLU/result.json"));
  auto aj = nlohmann::json::parse(read_file(run / "library/level1/19_ReLU/attempt.json"));
  CHECK(aj["sample"] == 1);
  CHECK(!fs::exists(run / "library/level2/1_Conv"));
  CHECK(!fs::exists(run / "library/stale"));
  auto idx = nlohmann::json::parse(read_file(run / "library/index.json"));
  REQUIRE(idx.size() == 1);
  CHECK(idx[0]["task"] == "level1/19_ReLU");
  CHECK(idx[0]["file"] == "level1/19_ReLU/kernel.cu");
  CHECK(near(idx[0]["speedup"].get<double>(), 1.8));
}

TEST_CASE("two backends: problems are scored apart, cut by backend, best one exported", "[metrics]") {
  TempDir tmp;
  fs::path run = tmp.path / "run";
  auto cpu = att("relu", 0, 1, Outcome::pass, 1.2);
  cpu.backend = "cpu";
  auto cuda = att("relu", 0, 1, Outcome::pass, 3.0);
  auto cuda_fail = att("gelu", 0, 1, Outcome::output_mismatch);
  {
    RunDir rd = RunDir::create(run, nlohmann::json::object());
    for (const auto& r : {cpu, cuda, cuda_fail}) rd.append(r);
    rd.write_attempt_file("relu", 0, 1, "kernel.cpp", "// cpu\n");
    rd.write_attempt_file("relu", 0, 1, "kernel.cu", "// cuda\n");
  }
  Summary s = summarize_run(run);
  CHECK(s.overall.best.tasks == 3);  // (cpu, relu), (cuda, relu), (cuda, gelu)
  REQUIRE(s.cuts.at("backend").size() == 2);
  CHECK(s.cuts.at("backend")[0].value == "cpu");
  CHECK(s.cuts.at("backend")[0].best.pass_at_k.at(1) == 1.0);
  CHECK(near(s.cuts.at("backend")[1].best.pass_at_k.at(1), 0.5));
  std::string md = render_report_md(s);
  CHECK(contains(md, "## By backend"));
  CHECK_FALSE(contains(md, "## By model"));  // one model: no table
  CHECK(contains(md, "| relu | cpu |"));
  LibraryExport ex = export_library(run);
  CHECK(ex.exported == 1);
  auto idx = nlohmann::json::parse(read_file(run / "library/index.json"));
  REQUIRE(idx.size() == 1);
  CHECK(idx[0]["backend"] == "cuda");
  CHECK(idx[0]["file"] == "relu/kernel.cu");
  CHECK(read_file(run / "library/relu/kernel.cu") == "// cuda\n");
}

TEST_CASE("the exported file is the one the record's source_sha names, never chosen by backend name",
          "[metrics]") {
  // One attempt directory holding two candidate files: the best record's own is the one whose
  // bytes hash to its source_sha (kforge's operator adapter after its marker left out), whatever
  // the file's name; without a hash, the first of kernel.cu, kernel.cpp, kernel.py.
  TempDir tmp;
  const std::string own = "// the judged source\n";
  const std::string other = "// another file\n";
  for (const std::string& sha : {sha256_hex(own), std::string()}) {
    fs::path run = tmp.path / (sha.empty() ? "unhashed" : "hashed");
    auto best = att("relu", 0, 1, Outcome::pass, 3.0);
    best.backend = "some-backend";
    best.source_sha = sha;
    {
      RunDir rd = RunDir::create(run, nlohmann::json::object());
      rd.append(best);
      rd.write_attempt_file("relu", 0, 1, "kernel.cu", other);
      rd.write_attempt_file("relu", 0, 1, "kernel.py",
                            own + "\n\n" + operator_adapter_marker() + "\nkforge's\n");
    }
    LibraryExport ex = export_library(run);
    CHECK(ex.exported == 1);
    auto idx = nlohmann::json::parse(read_file(run / "library/index.json"));
    REQUIRE(idx.size() == 1);
    CHECK(idx[0]["file"] == (sha.empty() ? "relu/kernel.cu" : "relu/kernel.py"));
  }
}

TEST_CASE("llm_error records are counted but not scored; a re-asked turn supersedes them silently",
          "[metrics]") {
  // Sample 0 passes at turn 1. Sample 1's turn 1 failed at the endpoint (llm_error), and
  // nothing else of it was recorded: the task has one scored sample, not two.
  std::vector<AttemptRecord> rs{att("gelu", 0, 1, Outcome::pass, 2.0), att("gelu", 1, 1, Outcome::llm_error)};
  rs[1].sub_kind = "http_error";
  Summary s = summarize(rs);
  CHECK(s.llm_errors == 1);
  CHECK(s.overall.stats.attempts == 1);
  CHECK(s.overall.stats.llm_errors == 1);
  CHECK(s.overall.stats.compiled == 1);
  CHECK(s.overall.stats.outcomes["llm_error"]["http_error"] == 1);
  CHECK(s.overall.best.episodes == 1);
  CHECK(near(s.overall.best.pass_at_k.at(1), 1.0));
  REQUIRE(s.tasks.size() == 1);
  CHECK(s.tasks[0].samples == 1);
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0].find("--resume") != std::string::npos);
  CHECK(render_report_md(s, "t").find("1 llm_error turns, not scored") != std::string::npos);

  // --resume asked sample 1's turn 1 again and it failed to compile: now two scored samples.
  rs.push_back(att("gelu", 1, 1, Outcome::compile_error));
  s = summarize(rs);
  CHECK(s.llm_errors == 0);
  CHECK(s.warnings.empty());
  CHECK(s.overall.best.episodes == 2);
  CHECK(near(s.overall.best.pass_at_k.at(1), 0.5));
  CHECK(s.overall.stats.outcomes.count("llm_error") == 0);

  // A task with nothing but llm_errors is not scored at all.
  s = summarize({att("mish", 0, 1, Outcome::llm_error), att("mish", 1, 1, Outcome::llm_error)});
  CHECK(s.overall.best.tasks == 0);
  CHECK(s.tasks.empty());
  CHECK(s.llm_errors == 2);
}
