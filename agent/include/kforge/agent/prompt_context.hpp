#pragma once
// kforge/agent/prompt_context.hpp — the task-side facts a prompt states (issue 11 §3): the
// exemplars' reference sources and the per-output-dtype tolerances. Thread-safe.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kforge/benchmarks/task.hpp"
#include "kforge/prompts/prompts.hpp"

namespace kforge::agent {

/// reference_of for retrieval::ExemplarStore: the run's suite source (profile applied) when it
/// has the task id, else the task file of the built-in kforge-core suite, which every shipped
/// exemplar comes from (so a KernelBench run still shows the exemplar's reference); "" when
/// neither has it.
std::function<std::string(const std::string&)> exemplar_reference_source(
    std::map<std::string, std::string> run_refs);

/// The task's tolerance for each distinct output dtype of `tensors`, in order of appearance.
std::vector<prompts::DtypeTolerance> output_tolerances(const Task& task,
                                                       const std::vector<prompts::TensorInfo>& tensors);

}  // namespace kforge::agent
