// fusion/add_layernorm, cpu backend: s = x + residual; y = LayerNorm(s) * weight + bias.
// Inputs: x [T, D], residual [T, D], weight [D], bias [D]. Outputs: y [T, D], s [T, D].
// One row per iteration: the add writes s, the row (D floats) stays in cache for the two
// statistics passes (mean, then centred variance: more accurate than E[s^2] - mean^2) and the
// normalising pass. Rows are distributed across threads.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>

namespace {
constexpr float kEps = 1e-5f;  // EPS of the task
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 4 || n_outputs != 2) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& r = inputs[1];
  const kf_tensor& w = inputs[2];
  const kf_tensor& b = inputs[3];
  if (x.ndim < 1 || w.ndim != 1 || b.ndim != 1) return 2;
  const int64_t D = x.sizes[x.ndim - 1];
  const int64_t T = kf_numel(&x) / D;
  if (kf_numel(&r) != T * D || w.sizes[0] != D || b.sizes[0] != D ||
      kf_numel(&outputs[0]) != T * D || kf_numel(&outputs[1]) != T * D)
    return 3;
  const float* xp = static_cast<const float*>(x.data);
  const float* rp = static_cast<const float*>(r.data);
  const float* wp = static_cast<const float*>(w.data);
  const float* bp = static_cast<const float*>(b.data);
  float* yp = static_cast<float*>(outputs[0].data);
  float* sp = static_cast<float*>(outputs[1].data);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = xp + t * D;
    const float* rr = rp + t * D;
    float* sr = sp + t * D;
    float* yr = yp + t * D;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < D; ++i) {
      sr[i] = xr[i] + rr[i];
      sum += sr[i];
    }
    const float mean = sum / static_cast<float>(D);
    float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < D; ++i) sq += (sr[i] - mean) * (sr[i] - mean);
    const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(D) + kEps);
#pragma omp simd
    for (int64_t i = 0; i < D; ++i) yr[i] = (sr[i] - mean) * rstd * wp[i] + bp[i];
  }
  return 0;
}
