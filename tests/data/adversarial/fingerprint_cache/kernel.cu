// fingerprint_cache (cuda): memoises its answer by a fingerprint of the inputs (16 sampled
// elements of x and y, read back to the host), betting that the timed repetitions replay
// inputs it has seen. The judge draws fresh inputs for every check trial and every bench
// batch: the cache never hits, every call computes (and pays the synchronous read-back).
// Expected outcome: pass (honest, slower time).
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>
#include <unordered_map>

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
  static std::unordered_map<uint64_t, void*> memo;
  auto s = static_cast<cudaStream_t>(stream);
  uint64_t h = 1469598103934665603ull;
  for (int t = 0; t < 2; ++t) {
    const int64_t n = kf_numel(&inputs[t]);
    for (int k = 0; k < 8; ++k) {
      uint32_t v = 0;
      cudaMemcpyAsync(&v, static_cast<const uint32_t*>(inputs[t].data) + (n - 1) * k / 7, 4,
                      cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      h = (h ^ v) * 1099511628211ull;
    }
  }
  const size_t bytes = static_cast<size_t>(kf_numel(&outputs[0])) * sizeof(float);
  if (auto it = memo.find(h); it != memo.end())
    return cudaMemcpyAsync(outputs[0].data, it->second, bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 3;
  compute(inputs, outputs, stream);
  void* copy = nullptr;
  if (memo.size() < 256 && cudaMalloc(&copy, bytes) == cudaSuccess) {
    cudaMemcpyAsync(copy, outputs[0].data, bytes, cudaMemcpyDeviceToDevice, s);
    memo[h] = copy;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
