// kforge/runs/run_status.hpp — how a run ended, read from its records (for the exit code), and
// whether it has finished and how long it ran, kept in its manifest (record_invocation).
//
// A run "scored" something when at least one record has a model outcome (is_model_outcome:
// the candidate was judged). An episode (task, sample) is "paused" when its last record in file
// order is an llm_error: the endpoint failed after the client's retries and --resume asks that
// turn again (a later record of the episode supersedes it). Values only; pure, thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kforge/runs/attempt.hpp"
#include "kforge/runs/run_dir.hpp"

namespace kforge {

struct RunStatus {
  int records = 0;          ///< every record read
  int scored = 0;           ///< records with a model outcome
  int paused_episodes = 0;  ///< episodes whose last record is an llm_error
  /// The message of the last llm_error record in file order ("" when none).
  std::string last_llm_error;
  std::string last_llm_error_task;  ///< its task id
};

/// Summarises records in file order (as attempts.jsonl holds them).
RunStatus run_status(const std::vector<AttemptRecord>& records);

/// Records an invocation of `kforge run` or `kforge eval` in the run's manifest (issue 40 §2):
/// adds `wall_s` (seconds this invocation ran, from its start) to the manifest's "wall_s" and
/// sets "complete". Called with (0, false) once the run directory is open, so a run being
/// written, or killed, reads as incomplete; and at the end with the invocation's time and
/// whether every episode has ended. Throws as RunDir::update_manifest.
void record_invocation(RunDir& run, double wall_s, bool complete);

}  // namespace kforge
