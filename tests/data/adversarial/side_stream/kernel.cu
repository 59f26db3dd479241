// side_stream: launches the right computation on its own non-blocking stream, after a ~200 ms
// spin, and returns without synchronising. Work on the runner's stream (and anything waiting
// on it) does not wait for it, so when kf_forward's stream is done the output still holds the
// poison. Expected outcome: output_mismatch / unwritten.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void slow_relu2_add(const float* x, const float* y, float* out, int64_t n,
                               uint64_t spin_ns) {
  const uint64_t start = global_ns();
  while (global_ns() - start < spin_ns) {
  }
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;  // deliberately not used
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static cudaStream_t side = nullptr;
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 2;
  const int64_t n = kf_numel(&outputs[0]);
  slow_relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, side>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n, 200ull * 1000 * 1000);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
