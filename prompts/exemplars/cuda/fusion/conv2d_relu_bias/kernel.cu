// fusion/conv2d_relu_bias, cuda backend: y = ReLU(conv3x3(x) + conv.bias) + bias, fp32, stride 1,
// padding 1 (a convolution with an epilogue). Inputs: x [N, C, H, W], then the parameters in
// named_parameters() order, the module's own before its submodules': bias [O, 1, 1],
// conv.weight [O, C, KH, KW], conv.bias [O].
// Direct convolution, tiled: a 16 x 16 block computes a 16 x 16 patch of OB = 8 output
// channels of one image. For each input channel it stages the (16 + KH - 1) x (16 + KW - 1)
// input halo (zero outside the image: the padding) and the 8 channels' taps in shared memory,
// so every input value is read from global memory about once per 8 outputs. The epilogue
// (conv bias, ReLU, bias) is applied to the registers before the one store of y.
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

namespace {

constexpr int TILE = 16, OB = 8, MAXK = 7;

__global__ void __launch_bounds__(TILE* TILE)
    conv_relu_bias(const float* __restrict__ X, const float* __restrict__ Wt, const float* __restrict__ CB,
                   const float* __restrict__ BB, float* __restrict__ Y, int C, int H, int W, int O, int KH,
                   int KW) {
  __shared__ float xs[TILE + MAXK - 1][TILE + MAXK - 1];
  __shared__ float ws[OB][MAXK * MAXK];
  const int groups = (O + OB - 1) / OB;
  const int n = blockIdx.z / groups, o0 = (blockIdx.z % groups) * OB;
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
  const int ow = blockIdx.x * TILE + tx, oh = blockIdx.y * TILE + ty;
  const int PH = KH / 2, PW = KW / 2, SH = TILE + KH - 1, SW = TILE + KW - 1;
  float acc[OB] = {};
  for (int c = 0; c < C; ++c) {
    const float* xp = X + (static_cast<int64_t>(n) * C + c) * H * W;
    for (int e = threadIdx.x; e < SH * SW; e += TILE * TILE) {
      const int ih = blockIdx.y * TILE + e / SW - PH, iw = blockIdx.x * TILE + e % SW - PW;
      xs[e / SW][e % SW] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? __ldg(xp + ih * W + iw) : 0.f;
    }
    for (int e = threadIdx.x; e < OB * KH * KW; e += TILE * TILE) {
      const int o = o0 + e / (KH * KW);
      ws[e / (KH * KW)][e % (KH * KW)] =
          o < O ? __ldg(Wt + (static_cast<int64_t>(o) * C + c) * KH * KW + e % (KH * KW)) : 0.f;
    }
    __syncthreads();
    for (int kh = 0; kh < KH; ++kh)
      for (int kw = 0; kw < KW; ++kw) {
        const float v = xs[ty + kh][tx + kw];
#pragma unroll
        for (int j = 0; j < OB; ++j) acc[j] = fmaf(v, ws[j][kh * KW + kw], acc[j]);
      }
    __syncthreads();
  }
  if (oh >= H || ow >= W) return;
#pragma unroll
  for (int j = 0; j < OB; ++j) {
    const int o = o0 + j;
    if (o >= O) break;
    Y[((static_cast<int64_t>(n) * O + o) * H + oh) * W + ow] =
        fmaxf(acc[j] + __ldg(CB + o), 0.f) + __ldg(BB + o);
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
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
  if (w.sizes[1] != C || kf_numel(&cb) != O || kf_numel(&bb) != O || KH > MAXK || KW > MAXK) return 3;
  if (y.sizes[0] != N || y.sizes[1] != O || y.sizes[2] != H || y.sizes[3] != W) return 3;
  if (kf_numel(&y) == 0) return 0;
  const int64_t z = N * ((O + OB - 1) / OB);
  if (z > 65535 || H > (int64_t{1} << 30) || W > (int64_t{1} << 30)) return 3;
  dim3 grid(static_cast<unsigned>((W + TILE - 1) / TILE), static_cast<unsigned>((H + TILE - 1) / TILE),
            static_cast<unsigned>(z));
  conv_relu_bias<<<grid, TILE * TILE, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(w.data),
      static_cast<const float*>(cb.data), static_cast<const float*>(bb.data), static_cast<float*>(y.data),
      static_cast<int>(C), static_cast<int>(H), static_cast<int>(W), static_cast<int>(O),
      static_cast<int>(KH), static_cast<int>(KW));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
