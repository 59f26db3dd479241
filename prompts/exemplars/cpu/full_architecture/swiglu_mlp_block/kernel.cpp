// full_architecture/swiglu_mlp_block, cpu backend.
//   h   = x * rsqrt(mean(x^2, -1) + eps) * norm_weight        [T, D]   (T = all leading dims)
//   g   = silu(h @ W_gate^T) * (h @ W_up^T)                    [T, H]
//   out = x + g @ W_down^T                                      [T, D]
// Inputs: x, norm_weight [D], w_gate.weight [H, D], w_up.weight [H, D], w_down.weight [D, H].
// All three products are "A times B-transposed" with both operands K-contiguous, so every output
// element is a unit-stride dot product. Work is tiled (a block of rows of A against a block of rows
// of B) so the B tile stays in cache while the rows of A stream past; tiles are spread over threads.
// The gate and up products share one pass over h and write g directly (the SwiGLU epilogue is fused).
#include "kforge/kernel_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr float kEps = 1e-6f;  // EPS of the task (RMSNorm epsilon)
constexpr int64_t kRowTile = 16;
constexpr int64_t kColTile = 64;

inline float dot(const float* a, const float* b, int64_t k) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 5 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& nw = inputs[1];
  const kf_tensor& wg = inputs[2];
  const kf_tensor& wu = inputs[3];
  const kf_tensor& wd = inputs[4];
  kf_tensor& y = outputs[0];
  if (x.ndim < 1 || nw.ndim != 1 || wg.ndim != 2 || wu.ndim != 2 || wd.ndim != 2) return 2;
  const int64_t D = x.sizes[x.ndim - 1];
  const int64_t T = kf_numel(&x) / D;
  const int64_t H = wg.sizes[0];
  if (nw.sizes[0] != D || wg.sizes[1] != D || wu.sizes[0] != H || wu.sizes[1] != D ||
      wd.sizes[0] != D || wd.sizes[1] != H || kf_numel(&y) != T * D)
    return 3;
  const float* xp = static_cast<const float*>(x.data);
  const float* nwp = static_cast<const float*>(nw.data);
  const float* wgp = static_cast<const float*>(wg.data);
  const float* wup = static_cast<const float*>(wu.data);
  const float* wdp = static_cast<const float*>(wd.data);
  float* out = static_cast<float*>(y.data);

  std::vector<float> h(static_cast<size_t>(T * D));
  std::vector<float> g(static_cast<size_t>(T * H));

  // 1. RMSNorm, one row per iteration.
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = xp + t * D;
    double ss = 0.0;
    for (int64_t i = 0; i < D; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / D) + kEps);
    float* hr = h.data() + t * D;
    for (int64_t i = 0; i < D; ++i) hr[i] = xr[i] * inv * nwp[i];
  }

  // 2. g = silu(h Wg^T) * (h Wu^T), tiled over (rows of h) x (rows of Wg/Wu).
  const int64_t rt = (T + kRowTile - 1) / kRowTile, ct = (H + kColTile - 1) / kColTile;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t tb = 0; tb < rt; ++tb)
    for (int64_t cb = 0; cb < ct; ++cb)
      for (int64_t t = tb * kRowTile; t < std::min(T, (tb + 1) * kRowTile); ++t) {
        const float* hr = h.data() + t * D;
        for (int64_t j = cb * kColTile; j < std::min(H, (cb + 1) * kColTile); ++j) {
          const float a = dot(hr, wgp + j * D, D);
          const float b = dot(hr, wup + j * D, D);
          g[t * H + j] = a / (1.0f + std::exp(-a)) * b;
        }
      }

  // 3. out = x + g Wd^T.
  const int64_t ct2 = (D + kColTile - 1) / kColTile;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t tb = 0; tb < rt; ++tb)
    for (int64_t cb = 0; cb < ct2; ++cb)
      for (int64_t t = tb * kRowTile; t < std::min(T, (tb + 1) * kRowTile); ++t) {
        const float* gr = g.data() + t * H;
        for (int64_t j = cb * kColTile; j < std::min(D, (cb + 1) * kColTile); ++j)
          out[t * D + j] = xp[t * D + j] + dot(gr, wdp + j * H, H);
      }
  return 0;
}
