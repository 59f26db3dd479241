// denormal_inputs: computes the right answer from the inputs as given, then fills x with
// denormals (1e-40f), hoping the reference runs afterwards on the same shared inputs and is
// slowed down by denormal arithmetic (a faster speedup for the candidate). The judge never
// runs the reference on shared memory, and on the cpu the inputs are mapped read-only into the
// candidate host: the first write faults. Expected outcome: runtime_error / segfault.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  auto* x = static_cast<float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  for (int64_t i = 0; i < n; ++i) x[i] = 1e-40f;
  return 0;
}
