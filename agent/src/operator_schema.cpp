// agent/src/operator_schema.cpp — ATen schemas for operator prompts (operator_schema.hpp).
#include "kforge/agent/operator_schema.hpp"

#include <nlohmann/json.hpp>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::agent {

namespace {

/// Reads operator names (one a line) from stdin and prints {name: schema or null} as JSON.
const char* kScript =
    "import json, sys\n"
    "import torch\n"
    "out = {}\n"
    "for name in sys.stdin.read().split():\n"
    "    try:\n"
    "        _, packet, overload = name.split('.', 2)\n"
    "        out[name] = str(getattr(getattr(torch.ops.aten, packet), overload)._schema)\n"
    "    except Exception:\n"
    "        out[name] = None\n"
    "print(json.dumps(out))\n";

}  // namespace

std::vector<std::string> fill_operator_schemas(std::vector<Task*> tasks, const std::string& python) {
  std::vector<Task*> ops;
  std::string names;
  for (Task* t : tasks)
    if (t->format == TaskFormat::aten_operator && t->signature.empty())
      ops.push_back(t), names += t->aten_op + "\n";
  if (ops.empty()) return {};
  sandbox::Spec spec;
  spec.argv = {python, "-I", "-B", "-c", kScript};
  spec.stdin_data = names;
  spec.limits.wall = std::chrono::seconds(120);
  spec.limits.cpu_seconds = 120;
  spec.limits.output_cap_bytes = 16 << 20;
  const auto res = sandbox::run(spec);
  if (res.status != sandbox::Status::exited || res.exit_code != 0)
    return {"operator schemas: " + python + " failed (" + std::string(sandbox::to_string(res.status)) +
            ", exit " + std::to_string(res.exit_code) +
            "): " + truncate_middle(trim(res.err + res.error), 400)};
  const auto j = nlohmann::json::parse(res.out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {"operator schemas: the interpreter's reply is not JSON"};
  std::vector<std::string> missing;
  for (Task* t : ops) {
    auto it = j.find(t->aten_op);
    if (it != j.end() && it->is_string())
      t->signature = it->get<std::string>();
    else
      missing.push_back(t->aten_op + ": PyTorch has no such overload (no schema in the prompt)");
  }
  return missing;
}

}  // namespace kforge::agent
