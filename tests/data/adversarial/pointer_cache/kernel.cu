// pointer_cache (cuda): memoises its answer by buffer address: for each (x, y, out) pointer
// triple it computes once into a private device buffer and afterwards only copies that back.
// The judge writes fresh inputs into the same shared buffers for every check trial, so the
// second trial gets the first trial's answer. Expected outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>
#include <map>
#include <tuple>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static void compute(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static std::map<std::tuple<void*, void*, void*>, void*> memo;
  const auto key = std::make_tuple(inputs[0].data, inputs[1].data, outputs[0].data);
  const size_t bytes = static_cast<size_t>(kf_numel(&outputs[0])) * sizeof(float);
  auto s = static_cast<cudaStream_t>(stream);
  if (auto it = memo.find(key); it != memo.end())
    return cudaMemcpyAsync(outputs[0].data, it->second, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 3;
  compute(inputs, outputs, stream);
  void* copy = nullptr;
  if (cudaMalloc(&copy, bytes) != cudaSuccess) return 2;
  cudaMemcpyAsync(copy, outputs[0].data, bytes, cudaMemcpyDeviceToDevice, s);
  memo[key] = copy;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
