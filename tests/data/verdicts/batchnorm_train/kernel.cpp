#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// BatchNorm2d in training mode: per-channel batch mean and biased variance over (N, H, W).
// Inputs: x, weight, bias, running_mean, running_var, num_batches_tracked.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 6 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  const float* w = static_cast<const float*>(in[1].data);
  const float* b = static_cast<const float*>(in[2].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t N = in[0].sizes[0], C = in[0].sizes[1], HW = in[0].sizes[2] * in[0].sizes[3];
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, s2 = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        double v = x[(n * C + c) * HW + i];
        s += v;
        s2 += v * v;
      }
    const double cnt = double(N * HW), mean = s / cnt, var = s2 / cnt - mean * mean;
    const double inv = 1.0 / std::sqrt(var + 1e-5);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        const int64_t k = (n * C + c) * HW + i;
        y[k] = float((x[k] - mean) * inv * w[c] + b[c]);
      }
  }
  return 0;
}
