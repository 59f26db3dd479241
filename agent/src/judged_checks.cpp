#include "kforge/agent/judged_checks.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "kforge/backends/backend.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

PrecisionContract precision_contract(const std::string& backend, const std::string& device_type,
                                     const std::vector<std::string>& run_allowed, const Task& task) {
  PrecisionContract c;
  const backends::Backend* b = backends::find_backend(backend);
  c.inspected = b && b->inspects_precision();
  c.gpu = device_type != "cpu";
  auto usable = [&](const std::vector<std::string>& kinds) {
    std::vector<std::string> out;
    for (const auto& k : kinds)
      if ((c.gpu || k != "tf32") && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  };
  c.run_allowed = usable(run_allowed);
  for (const auto& k : usable(task.allow_precision))
    if (std::find(c.run_allowed.begin(), c.run_allowed.end(), k) == c.run_allowed.end())
      c.task_allowed.push_back(k);
  return c;
}

namespace {

/// The precision line of a prompt's checks: the same run-level sentence on every task of a run,
/// the task's own allowance with its reason, detection claimed only where the backend inspects.
std::string precision_check(const PrecisionContract& p) {
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) s += (s.empty() ? "" : ", ") + a;
    return s.empty() ? std::string("none") : s;
  };
  std::string line =
      "precision: compute at no less than the precision of the tensors' dtype (float32 tensors: "
      "float32 math";
  line += p.gpu ? ", no TF32/FP16/BF16 tensor-core instructions)" : ")";
  line += p.inspected
              ? "; lower-precision math is detected in the compiled binary and is not credited with a "
                "speedup"
              : "; this backend's binaries are not inspected for it: the tolerances above are the check";
  line += "; lower precision allowed in this run: " + joined(p.run_allowed);
  if (!p.task_allowed.empty())
    line += "; allowed for this task too: " + joined(p.task_allowed) +
            (p.task_allowed == std::vector<std::string>{"tf32"}
                 ? " (PyTorch runs the reference's convolutions in TF32 on the GPU)"
                 : " (the task's own allowance)");
  return line;
}

}  // namespace

std::vector<std::string> judged_checks(const Task& task, const std::vector<backends::TensorSpec>& outputs,
                                       int trials, const PrecisionContract& precision) {
  std::vector<std::string> v;
  v.push_back(std::to_string(trials) +
              " trials, each on fresh random inputs from get_inputs() (a new seed per trial); outputs are "
              "pre-filled with a poison value, so every element must be written");
  v.push_back(
      "then one trial with the model's floating parameters perturbed (every weight and bias must be read "
      "and used, even where its initial value is 1 or 0) and one on scaled-normal inputs of both signs "
      "(where the reference stays finite): exact semantics, not an approximation that holds on [0, 1); "
      "there, float32 rounding differences beyond the tolerance are judged against a float64 run of the "
      "reference");
  std::set<std::string> dtypes;
  for (const auto& o : outputs) dtypes.insert(o.dtype);
  for (const auto& dt : dtypes) {
    Tolerance t = task.tolerance_for(dt);
    char b[1024];
    if (t.atol == 0 && t.rtol == 0)
      std::snprintf(b, sizeof b, "%s outputs must equal the reference exactly", dt.c_str());
    else
      std::snprintf(b, sizeof b,
                    "%s outputs: |out - ref| <= atol + rtol * |ref| elementwise with atol = %g, rtol = %g; "
                    "where the reference's values are small next to atol, atol shrinks with their "
                    "root-mean-square, and a constant output is rejected when the reference is not constant",
                    dt.c_str(), t.atol, t.rtol);
    v.push_back(b);
  }
  v.push_back(precision_check(precision));
  return v;
}

}  // namespace kforge::agent
