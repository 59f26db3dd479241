// caches_answer: computes correctly on the first call, copies the output into a static
// device buffer, and on every later call copies that buffer out instead of computing.
// Inputs are fresh per trial, so trials after the first see a stale answer. Expected
// outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static float* cached = nullptr;
  static int64_t cached_n = 0;
  const auto s = static_cast<cudaStream_t>(stream);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (cached && cached_n == n) {
    return cudaMemcpyAsync(out, cached, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 3;
  }
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data), out, n);
  if (cudaMalloc(&cached, bytes) != cudaSuccess) return 2;
  cached_n = n;
  return cudaMemcpyAsync(cached, out, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 3;
}
