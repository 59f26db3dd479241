// tests/unit/test_judge_stats.cpp — where the judge slot's time goes (issue 20): the attempts'
// judge timing (runs/judge_timing.hpp), its sums (runs/judge_stats.hpp) and `kforge stats` on a
// real cpu run against the scripted model.
#include <filesystem>
#include <fstream>
#include <map>

#include "catch.hpp"
#include "kforge/runs/judge_stats.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"
#include "scripted_server.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

AttemptRecord timed(std::vector<SlotJob> jobs, std::map<std::string, double> phases) {
  AttemptRecord r;
  r.task = "t";
  r.judge.session = "s1";
  r.judge.jobs = std::move(jobs);
  r.judge.phases_ms = std::move(phases);
  return r;
}

const PhaseTotal* find(const JudgeStats& s, const std::string& p) {
  for (const auto& x : s.phases)
    if (x.phase == p) return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("judge timing round-trips through attempts.jsonl and is absent when empty", "[judge_stats]") {
  AttemptRecord r = timed({{"load", "cpu#0", 1, 2, 30}, {"judge", "cpu#0", 40, 45, 90}},
                          {{"wait", 6}, {"judge", 45}, {"judge.check", 40}});
  const json j = to_json(r);
  REQUIRE(j.contains("judge_timing"));
  CHECK(attempt_from_json(j, 1).judge == r.judge);
  CHECK_FALSE(to_json(AttemptRecord{}).contains("judge_timing"));
  json bad = j;
  bad["judge_timing"]["jobs"][0]["end_ms"] = "late";
  CHECK_THROWS_WITH(attempt_from_json(bad, 7), Catch::Contains("judge_timing.jobs[0].end_ms"));
}

TEST_CASE("judge stats: phase totals with each parent's rest, busy time against the queued window",
          "[judge_stats]") {
  // Slot cpu#0: a load queued at 0 and run 10..30; a judge queued at 20 (while the load ran)
  // and run 30..70; then nothing queued until 100; a judge 100..110 (no wait). Work was queued
  // or running 0..70 and 100..110: 80 ms; busy 20 + 40 + 10 = 70 ms.
  std::vector<AttemptRecord> rs{
      timed({{"load", "cpu#0", 0, 10, 30}, {"judge", "cpu#0", 20, 30, 70}}, {{"wait", 20},
                                                                             {"load", 20},
                                                                             {"judge", 40},
                                                                             {"judge.check", 30},
                                                                             {"judge.check.host_start", 12},
                                                                             {"judge.check.calibrate", 8},
                                                                             {"judge.profile", 4},
                                                                             {"record", 2}}),
      timed({{"judge", "cpu#0", 100, 100, 110}}, {{"wait", 0}, {"judge", 10}, {"judge.check", 10}}),
      AttemptRecord{}};  // a record from before judge timing
  const JudgeStats s = judge_stats(rs);
  CHECK(s.attempts == 3);
  CHECK(s.timed == 2);
  CHECK(s.loads == 1);
  CHECK(s.judges == 2);
  REQUIRE(s.slots.size() == 1);
  CHECK(s.slots[0].busy_ms == Approx(70));
  CHECK(s.slots[0].queued_ms == Approx(80));
  CHECK(s.slots[0].span_ms == Approx(110));
  CHECK(s.slots[0].busy_fraction() == Approx(70.0 / 80));
  // Tree order: wait, load, judge (check (its laps by total, its rest), profile, its rest), record.
  std::vector<std::string> order;
  for (const auto& p : s.phases) order.push_back(p.phase);
  CHECK(order == std::vector<std::string>{"wait", "load", "judge", "judge.check", "judge.check.host_start",
                                          "judge.check.calibrate", "judge.check.(other)", "judge.profile",
                                          "judge.(other)", "record"});
  CHECK(find(s, "judge")->total_ms == Approx(50));
  CHECK(find(s, "judge")->attempts == 2);
  CHECK(find(s, "judge.check.(other)")->total_ms == Approx(40 - 20));
  CHECK(find(s, "judge.(other)")->total_ms == Approx(50 - 40 - 4));
  CHECK(find(s, "judge.check.host_start")->depth == 2);
  const std::string text = render_judge_stats(s);
  CHECK(text.find("host_start") != std::string::npos);
  CHECK(text.find("(87.5%") != std::string::npos);  // busy 70 of the 80 ms with work queued
}

TEST_CASE("kforge run records where the judge slot's time went; kforge stats sums it",
          "[judge_stats][agent]") {
  const fs::path dir = scratch("judge_stats_run");
  kforge::test::ScriptedServer srv(fs::path(KFORGE_TESTS_DIR) / "data/scripted/demo.json");
  const fs::path out = dir / "run";
  // gelu_tanh is repaired in 3 turns, huber_mean passes at once, horner_polynomial: two samples.
  auto r = kforge::test::run_kforge({"run",
                                     "--suite",
                                     "kforge-core",
                                     "--backend",
                                     "cpu",
                                     "--llm",
                                     "openai:scripted",
                                     "--base-url",
                                     srv.url(),
                                     "--profile",
                                     "ci",
                                     "--tasks",
                                     "activation/gelu_tanh,loss/huber_mean,math/horner_polynomial",
                                     "--samples",
                                     "2",
                                     "--turns",
                                     "3",
                                     "--trials",
                                     "2",
                                     "--reps",
                                     "5",
                                     "--profiler",
                                     "basic",
                                     "--no-print-report",
                                     "--out",
                                     out.string()},
                                    dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto recs = load_attempts(out).records;
  REQUIRE(!recs.empty());
  std::map<std::string, int> loads;
  int judged = 0;
  for (const auto& rec : recs) {
    INFO(rec.task << " " << rec.sample << " " << rec.turn << " " << to_string(rec.outcome));
    CHECK(rec.judge.phases_ms.count("record"));  // every record: its files' time
    if (!rec.judge.jobs.empty()) CHECK_FALSE(rec.judge.session.empty());
    for (const auto& j : rec.judge.jobs) {
      CHECK(j.slot == "cpu#0");
      CHECK(j.queued_ms <= j.start_ms);
      CHECK(j.start_ms <= j.end_ms);
      loads[rec.task] += j.kind == "load";
    }
    if (rec.check_ms > 0) {  // judged: the slot held it longer than the runner's check and bench took
      ++judged;
      const auto& p = rec.judge.phases_ms;
      REQUIRE(p.count("judge"));
      CHECK(p.at("judge") >= p.at("judge.check"));
      CHECK(p.at("judge.check") == Approx(rec.check_ms));
      CHECK(p.count("judge.check.host_start"));
      // A check under the device's shared hold does not calibrate its host (timed_lock.hpp); a
      // passed candidate's bench starts and calibrates one of its own.
      CHECK_FALSE(p.count("judge.check.calibrate"));
      CHECK(p.count("judge.profile"));
      if (rec.passed()) {
        CHECK(p.count("judge.bench.reference_timing"));
        CHECK(p.count("judge.bench.calibrate"));
      }
    }
  }
  CHECK(judged > 0);
  for (const auto& [task, n] : loads) CHECK(n == 1);  // one load per task, on its first attempt's record
  CHECK(loads.size() == 3);

  auto st = kforge::test::run_kforge({"stats", out.string()}, dir);
  REQUIRE(st.code == 0);
  for (const char* want :
       {"wait (queued for a slot)", "load (task load, reference set-up)", "judge (slot held", "host_start",
        "calibrate", "reference_timing", "profile", "record", "cpu#0", "judge slots busy"})
    CHECK(st.out.find(want) != std::string::npos);
  const JudgeStats s = judge_stats(recs);
  REQUIRE(s.slots.size() == 1);
  CHECK(s.slots[0].busy_fraction() > 0);
  CHECK(s.slots[0].busy_fraction() <= 1.0 + 1e-9);
}
