// denormal_inputs (cuda): computes the right answer, then fills x with denormals (1e-40f) in
// the shared, writable device input, hoping the reference is later run (or timed) on the same
// memory and slowed by denormal arithmetic. The judge computes and times the reference on its
// own private inputs only, and compares the shared inputs bit for bit with its pristine copy
// after every call. Expected outcome: output_mismatch / input_modified.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void compute_then_denormalise(float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
  x[i] = 1e-40f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  compute_then_denormalise<<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                             static_cast<cudaStream_t>(stream)>>>(static_cast<float*>(inputs[0].data),
                                                                  static_cast<const float*>(inputs[1].data),
                                                                  static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
