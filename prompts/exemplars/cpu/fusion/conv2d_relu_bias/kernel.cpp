// fusion/conv2d_relu_bias, cpu backend: y = ReLU(conv3x3(x) + conv.bias) + bias, fp32, stride 1,
// padding 1 (a convolution with an epilogue). Inputs: x [N, C, H, W], then the parameters in
// named_parameters() order, the module's own before its submodules': bias [O, 1, 1],
// conv.weight [O, C, KH, KW], conv.bias [O].
// Direct convolution: each OpenMP task owns one output plane (n, o), accumulated in a local
// buffer started from conv.bias; for every input channel and tap the inner loop is a
// contiguous, vectorised run along an output row (the padded edges clip the run instead of
// testing every element). The epilogue (ReLU, + bias) is applied as the plane is written out,
// so y is written exactly once.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kforge/kernel_abi.h"

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 4 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& bb = inputs[1];
  const kf_tensor& w = inputs[2];
  const kf_tensor& cb = inputs[3];
  kf_tensor& y = outputs[0];
  for (const kf_tensor* t : {&x, &w, &cb, &bb})
    if (t->dtype != KF_FLOAT32) return 2;
  if (y.dtype != KF_FLOAT32 || x.ndim != 4 || w.ndim != 4 || y.ndim != 4) return 3;
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t O = w.sizes[0], KH = w.sizes[2], KW = w.sizes[3];
  const int64_t PH = KH / 2, PW = KW / 2;  // "same" padding: 1 for the task's 3x3
  if (w.sizes[1] != C || kf_numel(&cb) != O || kf_numel(&bb) != O) return 3;
  if (y.sizes[0] != N || y.sizes[1] != O || y.sizes[2] != H || y.sizes[3] != W) return 3;
  const float* X = static_cast<const float*>(x.data);
  const float* Wt = static_cast<const float*>(w.data);
  const float* CB = static_cast<const float*>(cb.data);
  const float* BB = static_cast<const float*>(bb.data);
  float* Y = static_cast<float*>(y.data);

#pragma omp parallel
  {
    std::vector<float> acc(static_cast<size_t>(H * W));
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < O; ++o) {
        std::fill(acc.begin(), acc.end(), CB[o]);
        for (int64_t c = 0; c < C; ++c) {
          const float* xp = X + (n * C + c) * H * W;
          const float* wp = Wt + (o * C + c) * KH * KW;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t h_lo = std::max<int64_t>(0, PH - kh), h_hi = std::min(H, H + PH - kh);
            for (int64_t kw = 0; kw < KW; ++kw) {
              const float wv = wp[kh * KW + kw];
              const int64_t dw = kw - PW;
              const int64_t w_lo = std::max<int64_t>(0, -dw), w_hi = std::min(W, W - dw);
              for (int64_t oh = h_lo; oh < h_hi; ++oh) {
                float* __restrict__ arow = acc.data() + oh * W;
                const float* __restrict__ xrow = xp + (oh + kh - PH) * W + dw;
#pragma omp simd
                for (int64_t ow = w_lo; ow < w_hi; ++ow) arow[ow] += wv * xrow[ow];
              }
            }
          }
        }
        float* yp = Y + (n * O + o) * H * W;
        const float bias = BB[o];
#pragma omp simd
        for (int64_t i = 0; i < H * W; ++i) yp[i] = std::max(acc[static_cast<size_t>(i)], 0.0f) + bias;
      }
    }
  }
  return 0;
}
