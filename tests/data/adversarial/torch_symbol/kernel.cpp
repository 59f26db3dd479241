// torch_symbol: calls into ATen (declared by hand, as a candidate copying from a PyTorch
// extension would). The artifact never links LibTorch, so the reference is rejected at link
// or symbol-check time. Expected outcome: forbidden_api (rule: torch).
#include "kforge/kernel_abi.h"

#include <cstdint>

namespace at {
void manual_seed(uint64_t seed);
}  // namespace at

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  at::manual_seed(0);
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
