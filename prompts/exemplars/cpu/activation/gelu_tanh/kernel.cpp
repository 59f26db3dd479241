// activation/gelu_tanh, cpu backend: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// One pass over the data, split across OpenMP threads in contiguous chunks.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  const int64_t n = kf_numel(&x);
  if (kf_numel(&y) != n) return 3;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  const float k1 = 0.044715f;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[i];
    const float u = k0 * (v + k1 * v * v * v);
    out[i] = 0.5f * v * (1.0f + std::tanh(u));
  }
  return 0;
}
