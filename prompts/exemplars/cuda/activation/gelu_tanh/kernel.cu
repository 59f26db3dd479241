// activation/gelu_tanh, cuda backend: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Memory-bound: one read and one write per element. The main kernel moves float4 vectors
// (16-byte loads/stores) in a grid-stride loop; the last n % 4 elements, or everything when a
// pointer is not 16-byte aligned, go through a scalar grid-stride loop.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  const float k1 = 0.044715f;
  return 0.5f * v * (1.0f + tanhf(k0 * (v + k1 * v * v * v)));
}

__global__ void gelu_vec4(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4;
       i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = in[i];
    v.x = gelu_tanh(v.x);
    v.y = gelu_tanh(v.y);
    v.z = gelu_tanh(v.z);
    v.w = gelu_tanh(v.w);
    out[i] = v;
  }
}

__global__ void gelu_scalar(const float* __restrict__ in, float* __restrict__ out, int64_t begin,
                            int64_t n) {
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    out[i] = gelu_tanh(in[i]);
}

int grid_for(int64_t work, int threads) {
  int64_t blocks = (work + threads - 1) / threads;
  if (blocks > 4096) blocks = 4096;  // grid-stride loops cover the rest
  return blocks < 1 ? 1 : static_cast<int>(blocks);
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KF_FLOAT32 || outputs[0].dtype != KF_FLOAT32) return 2;
  const int64_t n = kf_numel(&inputs[0]);
  if (kf_numel(&outputs[0]) != n) return 3;
  if (n == 0) return 0;
  const float* in = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int threads = 256;
  const bool aligned = (reinterpret_cast<uintptr_t>(in) % 16 == 0) && (reinterpret_cast<uintptr_t>(out) % 16 == 0);
  int64_t done = 0;
  if (aligned) {
    const int64_t n4 = n / 4;
    if (n4 > 0)
      gelu_vec4<<<grid_for(n4, threads), threads, 0, s>>>(reinterpret_cast<const float4*>(in),
                                                           reinterpret_cast<float4*>(out), n4);
    done = n4 * 4;
  }
  if (done < n) gelu_scalar<<<grid_for(n - done, threads), threads, 0, s>>>(in, out, done, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
