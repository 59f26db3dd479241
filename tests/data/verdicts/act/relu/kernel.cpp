#include <kforge/kernel_abi.h>

// out = relu(x), float32, contiguous.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KF_FLOAT32) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t n = kf_numel(&out[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0.0f;
  return 0;
}
