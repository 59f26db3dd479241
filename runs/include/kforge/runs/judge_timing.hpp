#pragma once
// kforge/runs/judge_timing.hpp — where a judge slot's time went on one attempt (issue 20): the
// slot jobs the attempt caused (the task's load, the judging) with their queue, start and end
// times, and the wall time of every phase of them. Part of an AttemptRecord (JSON key
// "judge_timing", absent when empty); `kforge stats RUN` sums it over a run (judge_stats.hpp).
//
// Phase names ("phases_ms", milliseconds of wall clock): "wait" (queued for a slot), "load" (the
// task's load and reference set-up on the slot), "judge" (the slot held for the attempt, until
// the scheduler took the result), inside it "judge.check" and "judge.bench" (the client's wall
// time of each request) with the runner's laps "judge.check.<lap>" / "judge.bench.<lap>"
// (host_start, calibrate, reference, reference_timing, ...), "judge.precision" and
// "judge.profile"; and "record" (the attempt's files written). Values; thread-compatible.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kforge {

/// One job a judge slot ran for an attempt. Times are ms since `JudgeTiming::session` began
/// (the scheduler's steady clock).
struct SlotJob {
  std::string kind;  ///< "load" (the task's load, the first attempt of its first episode) or "judge"
  std::string slot;  ///< the slot's name, e.g. "cuda:0#0"
  double queued_ms = 0, start_ms = 0, end_ms = 0;
  bool operator==(const SlotJob&) const = default;
};

struct JudgeTiming {
  std::string session;  ///< when the judging process's scheduler started (UTC): the jobs' time base
  std::vector<SlotJob> jobs;
  std::map<std::string, double> phases_ms;
  bool empty() const { return jobs.empty() && phases_ms.empty(); }
  bool operator==(const JudgeTiming&) const = default;
};

nlohmann::json to_json(const JudgeTiming& t);
/// Reads "judge_timing"; throws RecordError (field judge_timing...) on a wrong type.
JudgeTiming judge_timing_from_json(const nlohmann::json& j, std::size_t line);

}  // namespace kforge
