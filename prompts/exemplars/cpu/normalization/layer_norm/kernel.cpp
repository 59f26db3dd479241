// normalization/layer_norm, cpu backend: y = (x - mean) / sqrt(var + eps) * weight + bias over
// the last dimension (biased variance, eps = 1e-5 as in the task). Rows are independent and
// split across OpenMP threads; each row is read twice (mean, then centred variance, which is
// more accurate than E[x^2] - mean^2 for rows with a large mean) and written once. The row is
// small enough to stay in L1/L2 between the passes. Partial sums use double.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& w = inputs[1];
  const kf_tensor& b = inputs[2];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || w.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32)
    return 2;
  if (x.ndim < 1) return 3;
  const int64_t dim = x.sizes[x.ndim - 1];
  if (dim <= 0 || kf_numel(&w) != dim || kf_numel(&b) != dim || kf_numel(&y) != kf_numel(&x)) return 3;
  const int64_t rows = kf_numel(&x) / dim;
  const float eps = 1e-5f;
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(w.data);
  const float* Bv = static_cast<const float*>(b.data);
  float* Y = static_cast<float*>(y.data);

#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = X + r * dim;
    float* yr = Y + r * dim;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    const float mean = static_cast<float>(sum / dim);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < dim; ++i) {
      const float d = xr[i] - mean;
      sq += static_cast<double>(d) * d;
    }
    const float rstd = static_cast<float>(1.0 / std::sqrt(sq / dim + eps));
#pragma omp simd
    for (int64_t i = 0; i < dim; ++i) yr[i] = (xr[i] - mean) * rstd * W[i] + Bv[i];
  }
  return 0;
}
