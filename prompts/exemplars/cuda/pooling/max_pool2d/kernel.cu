// pooling/max_pool2d, cuda backend: 2-D max pooling of an NCHW tensor with the task's window
// 3x3, stride 2, padding 1 (padded positions never win; NaN propagates as in PyTorch).
// One thread per output element in a grid-stride loop; consecutive threads write
// consecutive outputs of a row (coalesced stores) and read overlapping windows, which the
// read-only cache serves. Output H and W are read from the output tensor and checked.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kKernel = 3, kStride = 2, kPad = 1;

__global__ void max_pool2d_3x3s2p1(const float* __restrict__ x, float* __restrict__ y, int64_t total, int H, int W,
                                   int OH, int OW) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ow = static_cast<int>(i % OW);
    const int64_t t = i / OW;
    const int oh = static_cast<int>(t % OH);
    const int64_t plane = t / OH;
    const float* xp = x + plane * H * W;
    const int h0 = oh * kStride - kPad, w0 = ow * kStride - kPad;
    float best = -__int_as_float(0x7f800000);  // -inf
#pragma unroll
    for (int dh = 0; dh < kKernel; ++dh) {
      const int h = h0 + dh;
      if (h < 0 || h >= H) continue;
#pragma unroll
      for (int dw = 0; dw < kKernel; ++dw) {
        const int w = w0 + dw;
        if (w < 0 || w >= W) continue;
        const float v = __ldg(xp + static_cast<int64_t>(h) * W + w);
        if (v > best || isnan(v)) best = v;
      }
    }
    y[i] = best;
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  if (x.ndim != 4 || y.ndim != 4) return 3;
  const int64_t H = x.sizes[2], W = x.sizes[3], OH = y.sizes[2], OW = y.sizes[3];
  if (y.sizes[0] != x.sizes[0] || y.sizes[1] != x.sizes[1] || OH != (H + 2 * kPad - kKernel) / kStride + 1 ||
      OW != (W + 2 * kPad - kKernel) / kStride + 1)
    return 3;
  if (H > 1073741824 || W > 1073741824) return 3;
  const int64_t total = kf_numel(&y);
  if (total == 0) return 0;
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 16384) blocks = 16384;
  max_pool2d_3x3s2p1<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<float*>(y.data), total, static_cast<int>(H), static_cast<int>(W),
      static_cast<int>(OH), static_cast<int>(OW));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
