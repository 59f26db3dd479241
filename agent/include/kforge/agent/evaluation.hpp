// kforge/agent/evaluation.hpp — `kforge eval`: existing kernels judged against a suite on the
// scheduler `kforge run` uses, with no LLM; the kernel files it reads and the records it wrote.
// Free functions; run_eval owns its runners and run directory for its duration.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kforge/agent/run_command.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

/// The kernel files of one task for `kforge eval`: DIR/<task>/<source> is sample 0 and
/// DIR/<task>/<N>/<source> (N a non-negative decimal number) is sample N, recorded with that
/// sample index as `kforge run` records its samples. `errors` names what cannot be read as a
/// sample (a folder with a kernel whose name is not a number; a top-level kernel beside a `0/`
/// folder), one line each; those files are not judged.
struct KernelSamples {
  std::vector<std::pair<int, std::filesystem::path>> samples;  ///< (sample index, file), by index
  std::vector<std::string> errors;
};
KernelSamples find_kernel_samples(const std::filesystem::path& task_dir, const std::string& source_file);

/// Runs the command on the one scheduler `kforge run` uses (scheduler.hpp: each kernel an
/// episode with a given candidate; build -> load -> judge -> record, the attempt pipeline of
/// attempt.hpp), prints a row per kernel as it is judged (in the order judged) and a summary.
/// SIGINT/SIGTERM: no new kernel starts, the ones being compiled or judged finish and are
/// recorded, exit 130 (a second signal exits at once); the same command judges the rest.
/// Failing kernels are results (exit 0); bad arguments, a missing suite or kernels dir return
/// 2, a runner that does not start 3, and kernels that could not be judged (infra_error
/// records; a task whose reference does not load is listed once as unusable) kExitInfraError,
/// after the table and a count on stderr.
int run_eval(const EvalCommand& cmd);

/// What an eval wrote to `out` (EvalCommand::out): the last record of each task of its
/// attempts.jsonl (runs/run_dir.hpp load_attempts; none when the file is missing). Throws
/// RecordError on a malformed line, as load_attempts does.
std::map<std::string, AttemptRecord> eval_records(const std::filesystem::path& out);

}  // namespace kforge::agent