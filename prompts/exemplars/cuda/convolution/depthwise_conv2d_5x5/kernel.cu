// convolution/depthwise_conv2d_5x5, cuda backend: depthwise KxK convolution, stride 1,
// padding K/2, with bias. Inputs: x [N,C,H,W], weight [C,1,K,K], bias [C]; output [N,C,OH,OW]
// with OH = H + 2*(K/2) - K + 1 (= H for odd K).
// Each block computes a 32 x 16 output tile of one (n, c) plane: it stages the input tile plus
// its K-1 halo (zero-filled outside the image) and the plane's K*K weights in shared memory,
// then each thread produces two output rows from shared memory. Every input element is read
// from global memory about (32+K-1)(16+K-1)/(32*16) times instead of K*K times.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTileW = 32;
constexpr int kTileH = 16;
constexpr int kThreadsX = 32;
constexpr int kThreadsY = 8;  // each thread computes kTileH / kThreadsY = 2 rows

__global__ void depthwise(const float* __restrict__ x, const float* __restrict__ w,
                          const float* __restrict__ bias, float* __restrict__ y, int C, int H, int W,
                          int OH, int OW, int K, int pad, int tiles_x) {
  extern __shared__ float smem[];
  const int sw = kTileW + K - 1;
  const int sh = kTileH + K - 1;
  float* tile = smem;           // sh * sw
  float* wk = smem + sh * sw;   // K * K

  const int64_t plane = blockIdx.x / tiles_x;
  const int ox0 = (blockIdx.x % tiles_x) * kTileW;
  const int oy0 = blockIdx.y * kTileH;
  const int c = static_cast<int>(plane % C);
  const float* in = x + plane * H * W;
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int nthreads = kThreadsX * kThreadsY;

  for (int i = tid; i < K * K; i += nthreads) wk[i] = w[c * K * K + i];
  for (int i = tid; i < sh * sw; i += nthreads) {
    const int r = i / sw, col = i % sw;
    const int ih = oy0 - pad + r, iw = ox0 - pad + col;
    tile[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? in[(int64_t)ih * W + iw] : 0.0f;
  }
  __syncthreads();

  const float b = bias[c];
  const int lx = threadIdx.x;
  const int ox = ox0 + lx;
  for (int ly = threadIdx.y; ly < kTileH; ly += kThreadsY) {
    const int oy = oy0 + ly;
    float acc = b;
    for (int kh = 0; kh < K; ++kh) {
      const float* trow = tile + (ly + kh) * sw + lx;
      const float* wrow = wk + kh * K;
      for (int kw = 0; kw < K; ++kw) acc += wrow[kw] * trow[kw];
    }
    if (oy < OH && ox < OW) y[plane * OH * OW + (int64_t)oy * OW + ox] = acc;
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 3 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& w = inputs[1];
  const kf_tensor& b = inputs[2];
  const kf_tensor& y = outputs[0];
  if (x.ndim != 4 || w.ndim != 4 || b.ndim != 1 || y.ndim != 4) return 2;
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t K = w.sizes[2];
  const int64_t pad = K / 2;
  const int64_t OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
  if (w.sizes[0] != C || w.sizes[1] != 1 || w.sizes[3] != K || b.sizes[0] != C) return 3;
  if (y.sizes[0] != N || y.sizes[1] != C || y.sizes[2] != OH || y.sizes[3] != OW) return 3;
  if (N * C == 0 || OH <= 0 || OW <= 0) return 0;
  const int64_t tiles_x = (OW + kTileW - 1) / kTileW;
  const int64_t tiles_y = (OH + kTileH - 1) / kTileH;
  if (N * C * tiles_x > 0x7fffffffLL || tiles_y > 65535) return 5;
  const size_t smem = sizeof(float) * ((kTileH + K - 1) * (kTileW + K - 1) + K * K);
  if (smem > 48 * 1024) return 5;  // kernels this large would need the opt-in shared memory path
  dim3 grid(static_cast<unsigned>(N * C * tiles_x), static_cast<unsigned>(tiles_y));
  dim3 block(kThreadsX, kThreadsY);
  depthwise<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(w.data),
      static_cast<const float*>(b.data), static_cast<float*>(y.data), static_cast<int>(C),
      static_cast<int>(H), static_cast<int>(W), static_cast<int>(OH), static_cast<int>(OW),
      static_cast<int>(K), static_cast<int>(pad), static_cast<int>(tiles_x));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
