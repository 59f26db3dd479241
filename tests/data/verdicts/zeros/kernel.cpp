#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// out = 0 everywhere.
extern "C" int kf_forward(const kf_tensor*, int, kf_tensor* out, int n_out, void*) {
  if (n_out != 1) return 1;
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i) y[i] = 0.0f;
  return 0;
}
