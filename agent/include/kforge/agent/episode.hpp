#pragma once
// The agent loop (docs/ARCHITECTURE.md): `kforge run` drives, for every (task, sample), an
// episode of turns 1..T: render prompt -> LLM chat -> extract -> build -> judge (check, bench,
// profile) -> record -> feedback. Each episode is a pure state machine (episode_machine.hpp);
// one Scheduler on one Boost.Asio io_context owns every episode's state and drives it through
// ports (ports.hpp): LLM requests on libcurl's multi interface (one thread for all of them),
// compile jobs on `compile_jobs` threads, one judge slot per runner (`--devices`), each with its
// own bound and FIFO queue (scheduler.hpp). Every attempt goes through the one attempt pipeline
// (attempt.hpp) that `kforge eval` uses, and is appended to attempts.jsonl as it finishes
// (RunDir::append, fsynced) by its one writer.
//
// LLM failures: an empty reply is the model's format_error (sub-kind empty_reply). Any other
// failure after the client's retries (HTTP error, 429, timeout, malformed body, transport) is
// recorded as an llm_error attempt (not scored, see metrics.hpp) and pauses that episode: no
// turn is spent on a failing endpoint. After `max_llm_failures` consecutive llm_errors the whole
// run stops like SIGINT (exit 75). `--resume` asks every llm_error turn again.
//
// kforge's own failures (toolchain missing, judge worker failed, reference failed, an exception
// inside an episode) are infra_error attempts: recorded, not scored, never shown to the model,
// and they pause the episode; after `max_infra_failures` consecutive ones the run stops (exit
// 76). `--resume` asks them again. A judge slot that keeps failing leaves the pool.
//
// SIGINT/SIGTERM stop intake at once: no new turn starts, LLM requests queued or in flight are
// dropped (their turns were not recorded; --resume asks them), builds and judges in flight
// finish and are recorded. `--resume RUN_DIR` restores the recorded configuration (every option
// not given again on the command line; a given one that would change results must match:
// run_options.hpp), skips recorded turns and rebuilds the history from the attempt files. The
// run's options are a RunCommand (run_command.hpp).
#include <filesystem>

#include "kforge/agent/run_command.hpp"

namespace kforge::agent {

/// Runs the agent loop. Returns 0 on success, 130 when interrupted (in-flight attempts are
/// recorded), 75 when stopped by max_llm_failures consecutive llm_errors, 76
/// (kExitInfraError) when stopped by max_infra_failures consecutive infra_errors, 2 for bad
/// arguments, 3 when the runner cannot start. A task whose reference does not load (or whose
/// output is random in its module mode) is listed once as unusable (stderr, unusable.json, the
/// report) and costs no LLM call.
int run_agent(const RunCommand& cmd);

/// `kforge report RUN_DIR`: regenerates summary.json, report.md and report.html and prints
/// report.md.
int run_report(const std::filesystem::path& run_dir);

/// `kforge compare RUN_A RUN_B`: compares the tasks both runs attempted (warning on stderr
/// about the ones dropped, and about judging conditions that differ or a run that has not
/// finished: ComparedRuns::not_alike, also at the top of the page), prints the comparison and
/// writes it as `html` too ("" = no page). 2 when a run directory has no attempts.jsonl.
int run_compare(const std::filesystem::path& a, const std::filesystem::path& b,
                const std::filesystem::path& html);

/// Where compare writes its page when --html is not given: <out>/compare.html, or, without
/// --out, beside the runs: <parent of a>/compare-<a's name>-vs-<b's name>.html (never the
/// current directory unless a run lives there).
std::filesystem::path compare_page_path(const std::filesystem::path& a, const std::filesystem::path& b,
                                        const std::filesystem::path& out);

}  // namespace kforge::agent
