// first_seed_only: remembers x[0] of its first call and is correct only while x[0] has that
// value; for any other input it writes garbage (1234.5). Passes a single-seed check, fails
// the second trial. Expected outcome: output_mismatch / values.
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
  static bool seen = false;
  static float first_x0 = 0.0f;
  if (!seen) {
    seen = true;
    first_x0 = x[0];
  }
  if (x[0] == first_x0) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = 1234.5f;
  }
  return 0;
}
