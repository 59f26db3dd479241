// reduce/logsumexp_rows, cuda backend: out[r] = log(sum_j exp(x[r, j])) over the last
// dimension, in one read of the data with the online (running max, rescaled sum) form:
// each thread folds its elements into a pair (m, s) with s = sum exp(x - m), pairs are
// merged across the warp with shuffles and across the block through shared memory, and the
// result is m + log(s). Stable for any offsets (nothing overflows or underflows to a wrong
// answer). One 256-thread block per row (grid-stride over rows); float4 loads when the row
// length is a multiple of 4 and the base is aligned.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

struct MS {
  float m, s;
};

__device__ __forceinline__ float neg_inf() { return -__int_as_float(0x7f800000); }

__device__ __forceinline__ void fold(MS& a, float x) {
  if (x > a.m) {
    a.s = a.s * __expf(a.m - x) + 1.f;  // a.m = -inf gives exp(-inf) = 0
    a.m = x;
  } else if (x != neg_inf()) {
    a.s += __expf(x - a.m);
  }
}

__device__ __forceinline__ MS merge(MS a, MS b) {
  if (b.m == neg_inf()) return a;
  if (a.m == neg_inf()) return b;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__global__ void __launch_bounds__(kThreads) logsumexp_rows(const float* __restrict__ x, float* __restrict__ y,
                                                           int64_t rows, int64_t cols, bool vec) {
  __shared__ MS partial[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    MS a{neg_inf(), 0.f};
    if (vec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      for (int64_t c = threadIdx.x; c < cols / 4; c += kThreads) {
        const float4 v = __ldg(x4 + c);
        fold(a, v.x);
        fold(a, v.y);
        fold(a, v.z);
        fold(a, v.w);
      }
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += kThreads) fold(a, __ldg(xr + c));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MS b{__shfl_xor_sync(0xffffffffu, a.m, o), __shfl_xor_sync(0xffffffffu, a.s, o)};
      a = merge(a, b);
    }
    if (lane == 0) partial[warp] = a;
    __syncthreads();
    if (threadIdx.x == 0) {
      MS t = partial[0];
      for (int w = 1; w < kThreads / 32; ++w) t = merge(t, partial[w]);
      // All -inf: -inf. A +inf (or NaN) max: return it as is.
      y[row] = (t.m == neg_inf() || isinf(t.m) || isnan(t.m)) ? t.m : t.m + logf(t.s);
    }
    __syncthreads();  // partial is reused for the next row
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32 || x.ndim < 1) return 2;
  const int64_t cols = x.sizes[x.ndim - 1];
  if (cols <= 0) return 3;
  const int64_t rows = kf_numel(&x) / cols;
  if (kf_numel(&y) != rows) return 3;
  if (rows == 0) return 0;
  const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x.data) % 16 == 0;
  const unsigned grid = static_cast<unsigned>(rows < 1048576 ? rows : 1048576);
  logsumexp_rows<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), rows, cols, vec);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
