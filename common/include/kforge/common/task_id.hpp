// kforge/common/task_id.hpp — what a task id may be (issue 38 §2.1: task ids are paths).
//
// A task id names a task and, unchanged, the folders kforge writes for it (a run's
// attempts/<id>/..., an import's <out>/<id>/..., a library's <id>/...). So an id is an
// allow-list shape, checked once when a suite is loaded (benchmarks/task.cpp, every format):
// one or more components joined by '/', each made of [A-Za-z0-9._-] only, not "." or "..",
// at most 255 bytes each and 1024 in all. Real ids fit: "level1/19_ReLU", "arch/resnet18",
// "T/relu", "G/matrix_reduction", "aten.add.Tensor", "aten._softmax.default".
//
// Pure functions, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// Why `id` is not a valid task id ("has an empty component", "contains the character ' '", ...),
/// or nullopt when it is one. The reason does not repeat the id.
std::optional<std::string> task_id_problem(std::string_view id);

/// Throws std::invalid_argument("task id '<id>' <problem>") when `id` is not a valid task id.
void require_valid_task_id(std::string_view id);

/// The name of `known` closest to `name` by edit distance (Levenshtein, bytes), for "did you
/// mean" messages; "" when `known` is empty. Ties go to the first in `known`.
std::string closest_name(std::string_view name, const std::vector<std::string>& known);

}  // namespace kforge
