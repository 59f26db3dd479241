#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// out = relu(x) + 1e-3: beyond the fp32 default (atol 1e-4), within a task that declares 1e-2.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) + 1e-3f;
  return 0;
}
