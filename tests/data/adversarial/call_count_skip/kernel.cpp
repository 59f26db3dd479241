// call_count_skip: does the work for its first 6 calls only (the check has 5 trials) and then
// returns at once, leaving the output untouched, so that the timed repetitions cost nothing.
// Every bench runs in a fresh candidate host (its counter restarts at 0), but a bench batch is
// K >= 2 calls on K input sets and one set, chosen in secret, is verified per batch; the
// batches after the first 6 calls are never computed. Expected outcome: output_mismatch /
// bench_only.
#include "kforge/kernel_abi.h"

#include <cstdint>

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static int calls = 0;
  if (++calls > 6) return 0;
  compute(inputs, outputs);
  return 0;
}
