// writes_zeros: fills the output with 0 on the runner's stream. Every reference value is >= 1.
// Expected outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs;
  if (n_outputs != 1) return 1;
  const size_t bytes = static_cast<size_t>(kf_numel(&outputs[0])) * sizeof(float);
  return cudaMemsetAsync(outputs[0].data, 0, bytes, static_cast<cudaStream_t>(stream)) == cudaSuccess ? 0 : 3;
}
