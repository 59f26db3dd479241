// oob_during_bench (cuda): correct, but once the check is over (its 6 calls: 5 trials and the
// wide-input trial) every launch also writes one float past the end of its output, into the
// judge's canary gap: device memory the check never sees used. The judge checks canaries and
// parameters after every timed batch too. Expected outcome: runtime_error /
// out_of_bounds_write.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add_late(const float* x, const float* y, float* out, int64_t n, int stray) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
  if (stray && i == 0) out[n + 16] = 1.0f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static int calls = 0;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  relu2_add_late<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0,
                   static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                        static_cast<const float*>(inputs[1].data),
                                                        static_cast<float*>(outputs[0].data), n, ++calls > 6);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
