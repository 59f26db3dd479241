// oob_write: computes the right answer, then stores 2^40 elements past the output (4 TiB
// away: unmapped). Expected outcome: runtime_error / segfault.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  volatile float* far = out + (int64_t(1) << 40);
  *far = 1.0f;
  return 0;
}
