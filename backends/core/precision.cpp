#include "kforge/backends/precision.hpp"

#include <algorithm>

namespace kforge::backends {

std::string PrecisionReport::joined() const {
  std::string s;
  for (const auto& k : kinds) s += (s.empty() ? "" : ",") + k;
  return s;
}

std::set<std::string> disallowed_precision(const std::set<std::string>& found,
                                           const std::set<std::string>& dtypes,
                                           const std::set<std::string>& allowed) {
  // Bits of the significand each kind computes with; a kind is below a dtype with more.
  auto bits = [](const std::string& k) {
    if (k == "float64") return 53;
    if (k == "float32") return 24;
    if (k == "tf32" || k == "float16" || k == "fp16") return 11;
    if (k == "bfloat16" || k == "bf16") return 8;
    return 0;  // fp8, fp4, int8, b1: below every floating dtype
  };
  int need = 0;
  bool half_task = false;
  for (const auto& d : dtypes) {
    if (d == "float64" || d == "float32" || d == "float16" || d == "bfloat16") need = std::max(need, bits(d));
    half_task = half_task || d == "bfloat16";
  }
  std::set<std::string> out;
  if (need == 0) return out;
  for (const auto& k : found) {
    if (allowed.count(k)) continue;
    bool below = bits(k) < need;
    // fp16 on a bfloat16 task: more significand bits but a far smaller range (overflow at 65504).
    if (half_task && need == 8 && k == "fp16") below = true;
    // tf32 on a float16 task keeps 10 explicit bits and fp32 range: not below.
    if (below) out.insert(k);
  }
  return out;
}

}  // namespace kforge::backends
