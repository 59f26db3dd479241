// kforge/agent/progress.hpp — what `kforge run` shows while it runs (issue 23 §5): on a terminal
// one bar with an ETA, redrawn in place; in a log (stderr not a terminal) one line per finished
// attempt, so an overnight log says what happened and when. Pure formatting; thread-safe.
#pragma once

#include <string>

#include "kforge/agent/scheduler.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

/// "45s", "3m20s", "2h05m"; "--" for a negative or non-finite time.
std::string format_duration(double seconds);

/// The terminal bar, e.g. "[kforge run] [#########---------------] 20/42 episodes  63 attempts
/// 12 passes  1 llm error  ETA 3m20s". ETA: the time so far per finished episode times the
/// episodes left ("--" until one has finished). `active`: episodes not finished. `finished`: the
/// closing line, with the time taken ("in 5m02s") instead of the ETA; `active` is then unused:
/// the episodes a stop left unfinished (RunTally::abandoned + stopped) are not counted done. The
/// closing line of a run that stopped early says so: "2/6 episodes finished ... interrupted after
/// 40s" (SIGINT), "... stopped after 40s" (too many LLM or infrastructure failures).
std::string progress_bar(const RunTally& t, int active, double elapsed_s, bool finished = false,
                         int width = 24);

/// A log line for a finished attempt: "[kforge run] <task> sample <s> turn <t>: <outcome>[/<sub_kind>]
/// speedup <x.xx>x" (speedup "-" where none was measured).
std::string attempt_line(const AttemptRecord& rec);

}  // namespace kforge::agent
