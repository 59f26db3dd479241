// resize/resize_bilinear2d, cuda backend: bilinear interpolation of an NCHW tensor to the
// output's (OH, OW), align_corners=False: PyTorch's half-pixel rule, source coordinate
// scale * (dst + 0.5) - 0.5 clamped at 0, scale = in / out, the upper neighbour clamped to the
// last row/column. One thread per output element in a grid-stride loop: consecutive threads
// write consecutive outputs of a row (coalesced) and read neighbouring inputs, which the
// read-only cache shares between them.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

struct Src {
  int i0, i1;
  float l0, l1;
};

__device__ __forceinline__ Src source(int dst, float scale, int in) {
  float s = scale * (static_cast<float>(dst) + 0.5f) - 0.5f;
  s = s < 0.f ? 0.f : s;
  int i0 = static_cast<int>(s);
  i0 = i0 < in - 1 ? i0 : in - 1;
  const int i1 = i0 + (i0 < in - 1 ? 1 : 0);
  const float l1 = s - static_cast<float>(i0);
  return {i0, i1, 1.f - l1, l1};
}

__global__ void bilinear_nchw(const float* __restrict__ x, float* __restrict__ y, int64_t total, int H, int W, int OH,
                              int OW, float scale_h, float scale_w) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ow = static_cast<int>(i % OW);
    const int64_t t = i / OW;
    const int oh = static_cast<int>(t % OH);
    const int64_t plane = t / OH;
    const Src sh = source(oh, scale_h, H);
    const Src sw = source(ow, scale_w, W);
    const float* r0 = x + (plane * H + sh.i0) * W;
    const float* r1 = x + (plane * H + sh.i1) * W;
    y[i] = sh.l0 * (sw.l0 * __ldg(r0 + sw.i0) + sw.l1 * __ldg(r0 + sw.i1)) +
           sh.l1 * (sw.l0 * __ldg(r1 + sw.i0) + sw.l1 * __ldg(r1 + sw.i1));
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  if (x.ndim != 4 || y.ndim != 4 || y.sizes[0] != x.sizes[0] || y.sizes[1] != x.sizes[1]) return 3;
  const int64_t H = x.sizes[2], W = x.sizes[3], OH = y.sizes[2], OW = y.sizes[3];
  if (H <= 0 || W <= 0 || OH <= 0 || OW <= 0) return 3;
  if (H > 1073741824 || W > 1073741824 || OH > 1073741824 || OW > 1073741824) return 3;
  const int64_t total = kf_numel(&y);
  if (total == 0) return 0;
  const float scale_h = static_cast<float>(H) / static_cast<float>(OH);
  const float scale_w = static_cast<float>(W) / static_cast<float>(OW);
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 16384) blocks = 16384;
  bilinear_nchw<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), total, static_cast<int>(H), static_cast<int>(W),
      static_cast<int>(OH), static_cast<int>(OW), scale_h, scale_w);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
