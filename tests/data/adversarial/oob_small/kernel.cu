// oob_small: the grid is rounded up and the bounds check is off by 64, so the last 64
// threads write just past the end of the output (still inside the allocator's block: no
// fault). Only the runner's canary region can tell. Expected outcome: runtime_error /
// out_of_bounds_write.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add_overrun(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
  else if (i < n + 64) out[i] = 3.0f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  const int64_t total = n + 64;
  relu2_add_overrun<<<static_cast<unsigned>((total + threads - 1) / threads), threads, 0,
                      static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                           static_cast<const float*>(inputs[1].data),
                                                           static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
