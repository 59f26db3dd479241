// kforge/agent/operator_schema.hpp — the ATen schemas of a run's operator tasks (issue 24).
//
// The prompt of an ATen-operator task states the overload's schema
// (`add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`), which only PyTorch
// knows: fill_operator_schemas asks the torch interpreter once for every operator of the run
// (`python -I`, sandboxed, no candidate code involved) and stores each in its Task::signature.
// An operator PyTorch does not know, or an interpreter that cannot run, leaves the signature
// empty and returns the reason; the prompt then says the schema is unknown. Plain functions;
// not thread-safe on the same tasks.
#pragma once

#include <string>
#include <vector>

#include "kforge/benchmarks/task.hpp"

namespace kforge::agent {

/// Sets Task::signature of every aten_operator task among `tasks` to its ATen schema, asked of
/// `python` in one call. Returns one line per operator (or for the whole call) that got none.
std::vector<std::string> fill_operator_schemas(std::vector<Task*> tasks, const std::string& python);

}  // namespace kforge::agent
