#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// Softmax over dim 1 of a (B, C) float32 tensor, accumulated in double.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t B = in[0].sizes[0], C = in[0].sizes[1];
  for (int64_t r = 0; r < B; ++r) {
    const float* xr = x + r * C;
    double m = xr[0], s = 0;
    for (int64_t i = 1; i < C; ++i) m = xr[i] > m ? xr[i] : m;
    for (int64_t i = 0; i < C; ++i) s += std::exp(double(xr[i]) - m);
    for (int64_t i = 0; i < C; ++i) y[r * C + i] = float(std::exp(double(xr[i]) - m) / s);
  }
  return 0;
}
