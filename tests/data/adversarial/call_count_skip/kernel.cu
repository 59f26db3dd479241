// call_count_skip (cuda): launches the work for its first 6 calls only (the check has 5
// trials) and then returns at once. Each bench batch verifies one secretly chosen set of its
// K >= 2 calls; after the 6th call nothing is computed. Expected outcome: output_mismatch /
// bench_only.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

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
  static int calls = 0;
  if (++calls > 6) return 0;
  compute(inputs, outputs, stream);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
