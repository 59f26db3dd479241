// kforge/agent/task_command.hpp — `kforge task SUITE ID`: what a kernel for one task must be.
//
// Prints the prompt a first turn would get with no exemplars and no history (prompts::
// render_prompt, the same renderer and templates as `kforge run`): the task section with the
// reference, the tensor table (shapes as the judge loads them, with the profile applied), the
// tolerances and the checks, the output format with the kernel ABI, and the system message's
// rules. The judge (kforge-runner) is started to load the task, since the tensor table comes
// from its load. Free functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/prompts/prompts.hpp"

namespace kforge::agent {

/// The first turn's prompt input of `task` (no exemplars, no history): tensors from the load,
/// tolerances per output dtype, the judge's checks for `trials` and the allowed precisions
/// (the run's and the task's).
prompts::PromptInput first_turn_prompt_input(const Task& task, const backends::TaskRef& ref,
                                             const backends::LoadResult& load,
                                             const backends::Backend& backend, int trials,
                                             std::vector<std::string> allow_precision);

struct TaskCommand {
  std::string suite, id;
  std::string profile;  ///< "" = the task's own shapes
  std::string backend = "cuda";
  std::string device;  ///< "" = the backend's default
  int trials = 5;
  std::vector<std::string> allow_precision;
};

/// Runs `kforge task`: the prompt to stdout, exit 0; 2 for an unknown suite, task, backend or
/// profile (with the nearest task ids when the id is unknown); 3 when the runner does not
/// start; kExitInfraError when the task's reference does not load (the reason on stderr).
int run_task_command(const TaskCommand& cmd);

}  // namespace kforge::agent
