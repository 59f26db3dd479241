// kforge/common/tolerance.hpp — the default comparison tolerance of a dtype, the one table of
// the task model (benchmarks/task.hpp default_tolerance), the prompt's correctness section
// (prompts.hpp) and the judge's comparison (backends/judge tensor_check.cpp).
//
// Pure, header-only (the judge links nothing of kforge_common), thread-safe.
#pragma once

#include <string_view>

namespace kforge {

/// Absolute and relative tolerance: |a - e| <= atol + rtol * |e|; both 0: exact.
struct AtolRtol {
  double atol = 0;
  double rtol = 0;
};

/// KernelBench's defaults by dtype name (PyTorch's, without "torch."): float32 1e-4, float16
/// and bfloat16 1e-2, float64 1e-8; any other dtype (integers, bool) exact. What a task's own
/// tolerances do not override.
inline constexpr AtolRtol kernelbench_tolerance(std::string_view dtype) {
  if (dtype == "float32") return {1e-4, 1e-4};
  if (dtype == "float16" || dtype == "bfloat16") return {1e-2, 1e-2};
  if (dtype == "float64") return {1e-8, 1e-8};
  return {0, 0};
}

}  // namespace kforge
