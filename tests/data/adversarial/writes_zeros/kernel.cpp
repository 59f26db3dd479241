// writes_zeros: fills the output with 0. Every reference value is >= 1 (y in [1, 2)).
// Expected outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cstring>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs, (void)stream;
  if (n_outputs != 1) return 1;
  std::memset(outputs[0].data, 0, static_cast<size_t>(kf_numel(&outputs[0])) * sizeof(float));
  return 0;
}
