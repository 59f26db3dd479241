// oob_small: computes the right answer, then writes 64 elements just past the end of the
// output (a classic tail-handling bug). The memory there is usually mapped, so only the
// runner's canary region after the output can tell. Expected outcome: runtime_error /
// out_of_bounds_write.
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
  volatile float* tail = out + n;
  for (int i = 0; i < 64; ++i) tail[i] = 3.0f;
  return 0;
}
