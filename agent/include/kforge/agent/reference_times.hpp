#pragma once
// kforge/agent/reference_times.hpp — the run's estimate of each task's reference time (issue 39
// §3): the same task's reference, timed again by every bench, can read 11.4, 1.47 and 0.36 ms on
// a loaded machine, and a speedup against one noisy reading steers a model wrong. One object per
// run (AttemptSetup::reference_times), owned by the run's setup; thread-safe (judge slots note
// attempts concurrently).
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

class ReferenceTimes {
 public:
  /// Notes `rec`'s reference time (t_reference_ms, ms per call) when its bench was stable (a
  /// pass, t_reference_ms > 0, timing_unstable empty), then sets rec.t_reference_run_ms to the
  /// median of the task's stable reference times so far in this run (this one included) and
  /// rec.reference_run_timings to their count; both stay 0 when none is stable yet.
  void note(AttemptRecord& rec);

  /// The median of `task`'s stable reference times so far (ms; 0 = none) and their count.
  std::pair<double, int> estimate(const std::string& task) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<double>> stable_ms_;  ///< task id -> stable reference medians
};

}  // namespace kforge::agent
