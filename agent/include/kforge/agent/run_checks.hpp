// kforge/agent/run_checks.hpp — the configuration checks `kforge run` and `kforge eval` make
// before anything runs or any directory is made (issue 40 §2, §3): every task named on the
// command line or by a kernels folder exists (else exit 2, naming it and the closest task id),
// a shape profile applies to the selected tasks, and an eval directory is never mixed with a
// run or with an eval of other result-changing options.
//
// Free functions over values; they print nothing (the caller words the error, exit 2).
// Thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/benchmarks/task.hpp"

namespace kforge::agent {

/// The ids in `ids` that name no task of `suite`, each as "<id> (closest: <task id>)".
std::vector<std::string> unknown_task_ids(const std::vector<std::string>& ids, const Suite& suite);

/// Why `profile` cannot be used with `tasks` ("--profile CI: no selected task of suite S defines
/// it ..."), or nullopt when it is empty, "default", or at least one of them has it
/// (shapes.hpp has_profile: the task's own or a derived one).
std::optional<std::string> profile_problem(const std::vector<const Task*>& tasks, const std::string& profile,
                                           const std::string& suite_name);

/// The folders of an eval --kernels directory that hold a `source_file` but name no task of
/// `suite`: each DIR/<x>/<source_file> or DIR/<x>/<N>/<source_file> where neither <x> nor a
/// folder above it is a task id, as "<x> (closest: <task id>)" (a folder below a task's that is
/// not a sample is find_kernel_samples' to name). A folder holding its own reference.py is a
/// standalone exemplar (prompts/exemplars/<backend>/add), not a task's: left out. Looks at most 6
/// folders deep.
std::vector<std::string> unmatched_kernel_folders(const std::filesystem::path& kernels, const Suite& suite,
                                                  const std::string& source_file);

/// Whether `kforge eval --out DIR` may add to DIR, whose manifest.json is `recorded`, with the
/// configuration `config` (the manifest's "config" eval would write): not when DIR is a `kforge
/// run` directory (or any other command's), nor when an option that changes results differs
/// (the rules of run's option table, run_options.hpp, which eval's shared options come from: a
/// `same` option). nullopt when it may; else the message, naming the option and both values.
std::optional<std::string> eval_resume_problem(const nlohmann::json& recorded, const nlohmann::json& config);

}  // namespace kforge::agent
