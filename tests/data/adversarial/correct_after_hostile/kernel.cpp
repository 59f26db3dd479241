// correct_after_hostile: the correct kernel, judged right after the fd-exhausting, memory-hogging and
// file-dropping kernels: nothing they did outlives their candidate host. Expected outcome: pass.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KF_FLOAT32 || inputs[1].dtype != KF_FLOAT32) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
