#include <kforge/kernel_abi.h>

// out = a + b, float32, contiguous.
extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void*) {
  if (n_inputs != 2 || n_outputs != 1 || inputs[0].dtype != KF_FLOAT32) return 1;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}
