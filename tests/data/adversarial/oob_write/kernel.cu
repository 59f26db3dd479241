// oob_write: computes the right answer, then thread 0 stores 2^40 elements past the output
// (unmapped device memory). Expected outcome: runtime_error / illegal_memory_access.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add_far(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
  if (i == 0) out[i + (int64_t(1) << 40)] = 1.0f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  relu2_add_far<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0,
                  static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                       static_cast<const float*>(inputs[1].data),
                                                       static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
