// fusion/gemm_bias_gelu, cpu backend: y = GELU(x @ W^T + b), erf GELU, fp32 (a GEMM with an
// epilogue). Inputs: x [M, K], then fc.weight W [N, K] and fc.bias b [N].
// W is transposed once per call into a scratch buffer (K x N) so that the inner loop runs
// along rows of W^T and of the output tile, contiguous and vectorised. The buffer is kept and
// reused across calls (only its allocation: its contents are rebuilt every call, since the
// parameters may change between calls). Each OpenMP task owns one (MB x NB) tile of y,
// accumulated in a local buffer over K in KB-deep slabs, started from the bias; the epilogue
// (GELU) is applied as the tile is written out, so y is written exactly once.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kforge/kernel_abi.h"

namespace {
constexpr int64_t MB = 64;   // rows of y per tile
constexpr int64_t NB = 256;  // columns of y per tile
constexpr int64_t KB = 256;  // depth of one K slab
constexpr int64_t TB = 32;   // transpose block

std::vector<float> g_wt;  // scratch: W^T (K x N); kept between calls, refilled on each

inline float gelu_erf(float v) {
  return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& w = inputs[1];
  const kf_tensor& b = inputs[2];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || w.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32)
    return 2;
  if (x.ndim < 1 || w.ndim != 2) return 3;
  const int64_t K = x.sizes[x.ndim - 1], N = w.sizes[0];
  if (w.sizes[1] != K || kf_numel(&b) != N || K == 0) return 3;
  const int64_t M = kf_numel(&x) / K;
  if (kf_numel(&y) != M * N) return 3;
  const float* X = static_cast<const float*>(x.data);
  const float* W = static_cast<const float*>(w.data);
  const float* B = static_cast<const float*>(b.data);
  float* Y = static_cast<float*>(y.data);

  if (g_wt.size() < static_cast<size_t>(K * N)) g_wt.resize(static_cast<size_t>(K * N));
  float* WT = g_wt.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n0 = 0; n0 < N; n0 += TB)
    for (int64_t k0 = 0; k0 < K; k0 += TB)
      for (int64_t n = n0; n < std::min(N, n0 + TB); ++n)
        for (int64_t k = k0; k < std::min(K, k0 + TB); ++k) WT[k * N + n] = W[n * K + k];

  const int64_t mt = (M + MB - 1) / MB, nt = (N + NB - 1) / NB;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t ti = 0; ti < mt; ++ti) {
    for (int64_t tj = 0; tj < nt; ++tj) {
      const int64_t i0 = ti * MB, i1 = std::min(M, i0 + MB);
      const int64_t j0 = tj * NB, j1 = std::min(N, j0 + NB);
      const int64_t wd = j1 - j0;
      alignas(64) float acc[MB * NB];
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < wd; ++j) acc[(i - i0) * NB + j] = B[j0 + j];
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t k1 = std::min(K, k0 + KB);
        for (int64_t i = i0; i < i1; ++i) {
          float* __restrict__ crow = acc + (i - i0) * NB;
          const float* xrow = X + i * K;
          for (int64_t k = k0; k < k1; ++k) {
            const float xv = xrow[k];
            const float* __restrict__ wrow = WT + k * N + j0;
#pragma omp simd
            for (int64_t j = 0; j < wd; ++j) crow[j] += xv * wrow[j];
          }
        }
      }
      for (int64_t i = i0; i < i1; ++i) {  // the epilogue, fused into the write-out
        const float* crow = acc + (i - i0) * NB;
        float* yrow = Y + i * N + j0;
        for (int64_t j = 0; j < wd; ++j) yrow[j] = gelu_erf(crow[j]);
      }
    }
  }
  return 0;
}
