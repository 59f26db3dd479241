// fusion/gemm_bias_gelu, cuda backend: y = GELU(x @ W^T + b), erf GELU, fp32 FMA (no TF32: the
// task is fp32): a GEMM with an epilogue. Inputs: x [M, K], then fc.weight W [N, K] and fc.bias
// b [N]. Both operands are K-contiguous (x @ W^T), so a 256-thread block stages a 64 x 16 slab of
// x and of W in shared memory, each transposed to [k][row] so the inner loop reads both as
// float4; each thread owns a 4 x 4 sub-tile of the 64 x 64 output tile. The bias and GELU are
// applied to the registers before the one store of y (never written twice, never read back).
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

namespace {

constexpr int BM = 64, BN = 64, BK = 16;

__global__ void __launch_bounds__(256)
    gemm_bias_gelu(const float* __restrict__ X, const float* __restrict__ W, const float* __restrict__ B,
                   float* __restrict__ Y, int64_t M, int64_t N, int64_t K) {
  __shared__ __align__(16) float Xs[BK][BM];  // Xs[k][m]
  __shared__ __align__(16) float Ws[BK][BN];  // Ws[k][n]
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * BN;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < K; k0 += BK) {
    // 64 rows x 16 k of each operand: 1024 floats, 4 per thread, consecutive threads along k.
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int e = tid + l * 256;
      const int r = e / BK, k = e % BK;
      const int64_t gk = k0 + k;
      Xs[k][r] = (m0 + r < M && gk < K) ? __ldg(X + (m0 + r) * K + gk) : 0.f;
      Ws[k][r] = (n0 + r < N && gk < K) ? __ldg(W + (n0 + r) * K + gk) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a = *reinterpret_cast<const float4*>(&Xs[k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&Ws[k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t r = m0 + ty * 4 + i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t c = n0 + tx * 4 + j;
      if (c >= N) continue;
      const float v = acc[i][j] + __ldg(B + c);
      Y[r * N + c] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    }
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
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
  if (M == 0 || N == 0) return 0;
  const int64_t grid_y = (M + BM - 1) / BM, grid_x = (N + BN - 1) / BN;
  if (grid_y > 65535 || grid_x > 2147483647LL) return 3;
  dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  gemm_bias_gelu<<<grid, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<const float*>(w.data), static_cast<const float*>(b.data),
      static_cast<float*>(y.data), M, N, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
