// resize/resize_bilinear2d, cpu backend: bilinear interpolation of an NCHW tensor to the
// output's (OH, OW), align_corners=False (PyTorch's half-pixel rule with the source
// coordinate clamped at 0, scale = in / out). The source rows/columns and their weights are
// computed once per call into small tables, then every (n, c) plane is a gather of four taps.
#include "kforge/kernel_abi.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {
struct Tap {
  int64_t i0, i1;
  float l0, l1;
};

std::vector<Tap> taps(int64_t in, int64_t out) {
  std::vector<Tap> t(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t o = 0; o < out; ++o) {
    float src = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
    if (src < 0.f) src = 0.f;
    int64_t i0 = static_cast<int64_t>(src);
    if (i0 > in - 1) i0 = in - 1;
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const float l1 = src - static_cast<float>(i0);
    t[static_cast<size_t>(o)] = {i0, i1, 1.f - l1, l1};
  }
  return t;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  if (x.ndim != 4 || y.ndim != 4 || y.sizes[0] != x.sizes[0] || y.sizes[1] != x.sizes[1]) return 3;
  const int64_t planes = x.sizes[0] * x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t OH = y.sizes[2], OW = y.sizes[3];
  if (H <= 0 || W <= 0 || OH <= 0 || OW <= 0) return 3;
  const std::vector<Tap> th = taps(H, OH), tw = taps(W, OW);
  const float* X = static_cast<const float*>(x.data);
  float* Y = static_cast<float*>(y.data);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      const Tap& a = th[static_cast<size_t>(oh)];
      const float* r0 = X + pl * H * W + a.i0 * W;
      const float* r1 = X + pl * H * W + a.i1 * W;
      float* yr = Y + (pl * OH + oh) * OW;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Tap& b = tw[static_cast<size_t>(ow)];
        yr[ow] = a.l0 * (b.l0 * r0[b.i0] + b.l1 * r0[b.i1]) + a.l1 * (b.l0 * r1[b.i0] + b.l1 * r1[b.i1]);
      }
    }
  }
  return 0;
}
