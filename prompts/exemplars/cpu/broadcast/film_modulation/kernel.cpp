// broadcast/film_modulation, cpu backend: y[n,c,h,w] = x[n,c,h,w] * (1 + scale[n,c]) + shift[n,c].
// Each (n, c) plane is contiguous, so the per-plane factors are loaded once and the inner loop
// is a vectorisable multiply-add over H*W elements. Planes are distributed across threads.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& scale = inputs[1];
  const kf_tensor& shift = inputs[2];
  kf_tensor& y = outputs[0];
  if (x.ndim != 4 || scale.ndim != 2 || shift.ndim != 2) return 2;
  const int64_t planes = x.sizes[0] * x.sizes[1];
  const int64_t hw = x.sizes[2] * x.sizes[3];
  if (kf_numel(&scale) != planes || kf_numel(&shift) != planes || kf_numel(&y) != planes * hw) return 3;
  const float* xp = static_cast<const float*>(x.data);
  const float* sc = static_cast<const float*>(scale.data);
  const float* sh = static_cast<const float*>(shift.data);
  float* yp = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float a = 1.0f + sc[p];
    const float b = sh[p];
    const float* src = xp + p * hw;
    float* dst = yp + p * hw;
#pragma omp simd
    for (int64_t i = 0; i < hw; ++i) dst[i] = src[i] * a + b;
  }
  return 0;
}
