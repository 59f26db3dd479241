// math/horner_polynomial, cuda backend: y = sum_k coeffs[k] x^k by Horner's rule, elementwise.
// Inputs: x [N], coeffs [DEGREE + 1] (device memory). Eager PyTorch launches two kernels per
// degree and re-reads y each time; here each block stages the coefficients in shared memory once
// and every element is read once and written once. float4 grid-stride main loop, scalar tail.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float horner(float v, const float* c, int nc) {
  float acc = c[nc - 1];
  for (int k = nc - 2; k >= 0; --k) acc = fmaf(acc, v, c[k]);
  return acc;
}

__global__ void poly(const float* __restrict__ x, const float* __restrict__ coeffs, int nc,
                     float* __restrict__ y, int64_t n, bool vec4) {
  extern __shared__ float c[];
  for (int i = threadIdx.x; i < nc; i += blockDim.x) c[i] = coeffs[i];
  __syncthreads();
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t tail = 0;
  if (vec4) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      float4 v = x4[i];
      v.x = horner(v.x, c, nc);
      v.y = horner(v.y, c, nc);
      v.z = horner(v.z, c, nc);
      v.w = horner(v.w, c, nc);
      y4[i] = v;
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride) y[i] = horner(x[i], c, nc);
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&inputs[0]);
  const int64_t nc = kf_numel(&inputs[1]);
  if (nc < 1 || nc > 8192 || kf_numel(&outputs[0]) != n) return 2;
  if (n == 0) return 0;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const bool vec4 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int threads = 256;
  int64_t blocks = ((vec4 ? n / 4 : n) + threads - 1) / threads;
  if (blocks > 4096) blocks = 4096;
  if (blocks < 1) blocks = 1;
  poly<<<static_cast<unsigned>(blocks), threads, sizeof(float) * nc, static_cast<cudaStream_t>(stream)>>>(
      x, static_cast<const float*>(inputs[1].data), static_cast<int>(nc), y, n, vec4);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
