// convolution/depthwise_conv2d_5x5, cpu backend: depthwise KxK convolution, stride 1,
// padding K/2, with bias. Inputs: x [N,C,H,W], weight [C,1,K,K], bias [C].
// Each (n, c) plane is independent; threads take whole planes. For every output row the
// kernel taps are applied as shifted, vectorisable row updates (out_row += w * in_row[+shift]),
// with the valid column range computed once per tap instead of a bounds check per element.
#include "kforge/kernel_abi.h"

#include <algorithm>
#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& w = inputs[1];
  const kf_tensor& b = inputs[2];
  kf_tensor& y = outputs[0];
  if (x.ndim != 4 || w.ndim != 4 || b.ndim != 1 || y.ndim != 4) return 2;
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t K = w.sizes[2];
  if (w.sizes[0] != C || w.sizes[1] != 1 || w.sizes[3] != K || b.sizes[0] != C) return 3;
  if (y.sizes[0] != N || y.sizes[1] != C || y.sizes[2] != H || y.sizes[3] != W) return 3;
  const int64_t pad = K / 2;
  const float* xp = static_cast<const float*>(x.data);
  const float* wp = static_cast<const float*>(w.data);
  const float* bp = static_cast<const float*>(b.data);
  float* yp = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < N * C; ++p) {
    const int64_t c = p % C;
    const float* in = xp + p * H * W;
    const float* wk = wp + c * K * K;
    float* out = yp + p * H * W;
    for (int64_t oh = 0; oh < H; ++oh) {
      float* orow = out + oh * W;
      std::fill(orow, orow + W, bp[c]);
      for (int64_t kh = 0; kh < K; ++kh) {
        const int64_t ih = oh + kh - pad;
        if (ih < 0 || ih >= H) continue;
        const float* irow = in + ih * W;
        for (int64_t kw = 0; kw < K; ++kw) {
          const int64_t shift = kw - pad;  // output column ow reads input column ow + shift
          const int64_t lo = std::max<int64_t>(0, -shift);
          const int64_t hi = std::min<int64_t>(W, W - shift);
          const float wv = wk[kh * K + kw];
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * irow[ow + shift];
        }
      }
    }
  }
  return 0;
}
