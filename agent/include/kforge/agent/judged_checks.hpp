// kforge/agent/judged_checks.hpp — what a prompt states about how a kernel is judged: the trials,
// tolerances and the precision contract as a backend applies it (docs/judge.md). Pure
// functions over values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/task.hpp"

namespace kforge::agent {

/// The precision contract as one backend applies it: what a prompt may truthfully say of it.
struct PrecisionContract {
  bool inspected = false;                 ///< the artifact is inspected (Backend::inspects_precision)
  bool gpu = false;                       ///< the device has reduced-precision formats such as TF32
  std::vector<std::string> run_allowed;   ///< the run's --allow-precision, the same for every task
  std::vector<std::string> task_allowed;  ///< the task's own (KernelBench convolutions: tf32)
};

/// The contract of `backend` (its name and device type) for a task: kinds its device cannot use
/// (tf32 off the GPU) are dropped from both lists.
PrecisionContract precision_contract(const std::string& backend, const std::string& device_type,
                                     const std::vector<std::string>& run_allowed, const Task& task);

/// What the prompt states about how a kernel of `task` is judged (docs/judge.md): the trials, the
/// tolerance of each output dtype (with the magnitude scaling and the constant-output rule of
/// tensor_check.cpp), and the precision contract: the run's allowance stated on every task
/// ("none" included), the task's own with its reason, detection only where it happens.
std::vector<std::string> judged_checks(const Task& task, const std::vector<backends::TensorSpec>& outputs,
                                       int trials, const PrecisionContract& precision);

}  // namespace kforge::agent
