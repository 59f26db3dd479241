// kforge/agent/run_exit.hpp — how a run ends: the exit statuses of `kforge eval` and `kforge run` for
// kforge's own failures and the endpoint's, the run's unusable tasks file, and the status of a
// finished run from its records. Free functions; thread-safe for distinct run directories.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>

namespace kforge::agent {

/// Exit status of `kforge eval` when some kernels could not be judged (infra_error: toolchain
/// missing, runner or reference failed), and of `kforge run` when it stopped after
/// --max-infra-failures consecutive infra_errors.
inline constexpr int kExitInfraError = 76;

/// Exit status of `kforge run` when the endpoint failed: stopped after --max-llm-failures
/// consecutive llm_errors, or ended with episodes paused at an llm_error (--resume asks again).
inline constexpr int kExitLlmError = 75;

/// Writes <run_dir>/unusable.json: {task id: reason} for the tasks whose reference could not be
/// loaded or judged in this invocation (summarize_run lists them in the summary and report).
void write_unusable(const std::filesystem::path& run_dir, const std::map<std::string, std::string>& unusable);

/// The exit status of a run that finished without being stopped, from its records
/// (runs/run_status.hpp): kExitLlmError when an episode is paused at an llm_error (the count and
/// the last LLM error are written to `err`), else kExitInfraError when nothing was scored (no
/// record has a model outcome: every attempt failed in kforge, or every task is unusable; said
/// on `err`), else 0.
int finished_run_exit_status(const std::filesystem::path& run_dir, std::ostream& err);

}  // namespace kforge::agent
