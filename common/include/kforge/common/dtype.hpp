// kforge/common/dtype.hpp — the size of a tensor element by its dtype name.
//
// One table for every place that turns a shape and a dtype into bytes: the shapes read from a
// task's get_inputs() (benchmarks/shapes.hpp) and the judge's reported inputs of a TritonBench
// performance input (backends/tritonbench_perf.hpp). It knows PyTorch's dtype names as the
// runner reports them ("float32", "bfloat16", "float8_e4m3fn", ...) and the aliases a task's
// Python source writes (torch.float, torch.half, torch.long, ...). Pure, thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace kforge {

/// Bytes of one element of `dtype` (a PyTorch dtype name without "torch."); 4 for a name it
/// does not know.
std::int64_t dtype_bytes(std::string_view dtype);

}  // namespace kforge
