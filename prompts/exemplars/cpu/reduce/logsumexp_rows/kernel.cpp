// reduce/logsumexp_rows, cpu backend: out[r] = log(sum_j exp(x[r, j])) over the last
// dimension, computed stably as max + log(sum exp(x - max)): one pass for the row max, one
// for the shifted sum (the row stays in cache). Rows are split across OpenMP threads.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>
#include <limits>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32 || x.ndim < 1) return 2;
  const int64_t cols = x.sizes[x.ndim - 1];
  if (cols <= 0) return 3;
  const int64_t rows = kf_numel(&x) / cols;
  if (kf_numel(&y) != rows) return 3;
  const float* X = static_cast<const float*>(x.data);
  float* Y = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = X + r * cols;
    float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < cols; ++j) mx = xr[j] > mx ? xr[j] : mx;
    if (std::isinf(mx)) {  // all -inf (or a +inf): the answer is mx itself
      Y[r] = mx;
      continue;
    }
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(xr[j] - mx);
    Y[r] = mx + std::log(sum);
  }
  return 0;
}
