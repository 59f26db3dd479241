#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// The exact (erf) GELU.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  return 0;
}
