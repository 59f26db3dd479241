// oob_during_bench: correct, but once the check is over (its 6 calls: 5 trials and the
// wide-input trial) it also writes one float past the end of its output, into the judge's
// canary gap: scratch space the check never sees used. The judge checks canaries and
// parameters after every timed batch too. Expected outcome: runtime_error /
// out_of_bounds_write.
#include <cstdint>

#include "kforge/kernel_abi.h"

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  static int calls = 0;
  if (++calls > 6) out[n + 16] = 1.0f;
  return 0;
}
