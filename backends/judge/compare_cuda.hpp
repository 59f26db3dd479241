// The one-pass comparison (compare_core.hpp) on a CUDA device: grid-stride kernels on the
// legacy default stream (the one the judge's LibTorch work runs on), one partial per block,
// merged on the host. Declared without CUDA or LibTorch types so that tensor_check.cpp can
// call it; built only where kforge-runner has CUDA (KFORGE_RUNNER_CUDA). Stateless; callers
// serialise their own use of the device.
#pragma once

#include <cstddef>
#include <string>

#include "compare_core.hpp"

namespace kforge::runner::fused {

/// Bytes of device scratch memory the calls below need (the per-block partials).
std::size_t cuda_scratch_bytes();

/// Pass 1 over `n` elements of the contiguous device buffer `expected`. Returns "" or the CUDA
/// error's name; waits for the result.
std::string cuda_reference_stats(const void* expected, int64_t n, FloatKind kind, void* scratch,
                                 ReferenceStats* out);

/// Pass 2 over `n` elements of the contiguous device buffers `actual` and `expected`.
std::string cuda_output_stats(const void* actual, const void* expected, int64_t n, FloatKind kind,
                              const Rule& rule, void* scratch, OutputStats* out);

}  // namespace kforge::runner::fused
