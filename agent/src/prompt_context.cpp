#include "kforge/agent/prompt_context.hpp"

#include <memory>

namespace kforge::agent {

std::function<std::string(const std::string&)> exemplar_reference_source(
    std::map<std::string, std::string> run_refs) {
  auto core = std::make_shared<std::map<std::string, std::string>>();
  try {
    for (const auto& dir : builtin_suite_dirs()) {
      if (dir.filename() != "kforge-core") continue;
      for (const auto& t : load_suite(dir).tasks) (*core)[t.id] = t.source;
    }
  } catch (...) {
    // no built-in suite: the run's own references only
  }
  return [refs = std::move(run_refs), core](const std::string& id) {
    if (auto it = refs.find(id); it != refs.end() && !it->second.empty()) return it->second;
    if (auto it = core->find(id); it != core->end()) return it->second;
    return std::string();
  };
}

std::vector<prompts::DtypeTolerance> output_tolerances(const Task& task,
                                                       const std::vector<prompts::TensorInfo>& tensors) {
  std::vector<prompts::DtypeTolerance> out;
  for (const auto& t : tensors) {
    if (t.role != "output") continue;
    bool seen = false;
    for (const auto& d : out) seen = seen || d.dtype == t.dtype;
    if (seen) continue;
    const Tolerance tol = task.tolerance_for(t.dtype);
    out.push_back({t.dtype, tol.atol, tol.rtol});
  }
  return out;
}

}  // namespace kforge::agent
