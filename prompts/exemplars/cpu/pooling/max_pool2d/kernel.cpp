// pooling/max_pool2d, cpu backend: 2-D max pooling of an NCHW tensor with the task's window
// 3x3, stride 2, padding 1 (padded positions never win; NaN propagates as in PyTorch). The
// output's H and W come from the output tensor and are checked against the input. Each
// OpenMP iteration is one (n, c) plane; the window is clipped once per output row/column.
#include "kforge/kernel_abi.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  if (x.ndim != 4 || y.ndim != 4) return 3;
  const int64_t kernel = 3, stride = 2, pad = 1;
  const int64_t planes = x.sizes[0] * x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t OH = y.sizes[2], OW = y.sizes[3];
  if (y.sizes[0] != x.sizes[0] || y.sizes[1] != x.sizes[1] || OH != (H + 2 * pad - kernel) / stride + 1 ||
      OW != (W + 2 * pad - kernel) / stride + 1)
    return 3;
  const float* X = static_cast<const float*>(x.data);
  float* Y = static_cast<float*>(y.data);
#pragma omp parallel for schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* xp = X + pl * H * W;
    float* yp = Y + pl * OH * OW;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * stride - pad, 0);
      const int64_t h1 = std::min<int64_t>(oh * stride - pad + kernel, H);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * stride - pad, 0);
        const int64_t w1 = std::min<int64_t>(ow * stride - pad + kernel, W);
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const float v = xp[h * W + w];
            if (v > best || std::isnan(v)) best = v;
          }
        yp[oh * OW + ow] = best;
      }
    }
  }
  return 0;
}
