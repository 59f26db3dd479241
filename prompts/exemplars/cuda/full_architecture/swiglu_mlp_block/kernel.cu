// full_architecture/swiglu_mlp_block, cuda backend.
//   h   = x * rsqrt(mean(x^2, -1) + eps) * norm_weight        [T, D]   (T = all leading dims)
//   g   = silu(h @ W_gate^T) * (h @ W_up^T)                    [T, H]
//   out = x + g @ W_down^T                                      [T, D]
// Inputs: x, norm_weight [D], w_gate.weight [H, D], w_up.weight [H, D], w_down.weight [D, H].
// Three launches on the given stream:
//   1. rmsnorm: one block per row, block-wide sum of squares (warp shuffles + shared memory).
//   2. a dual tiled SGEMM: each block computes a 128 x 64 tile of both h W_gate^T and h W_up^T
//      from one shared-memory copy of the h tile, and writes silu(a) * b (SwiGLU fused into the
//      epilogue, so the two [T, H] products never reach global memory).
//   3. the same SGEMM with a residual epilogue: out = x + g W_down^T.
// The SGEMM stages BK=16 slices of A and B (both K-contiguous, "A times B-transposed") in shared
// memory, transposed so that each thread reads its TM x TN operands with 16-byte loads; every
// thread accumulates an 8 x 4 register tile. All loads are bounds-checked (zero fill), so any
// T, D, H work. Scratch buffers h and g come from the stream-ordered allocator.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr float kEps = 1e-6f;  // EPS of the task (RMSNorm epsilon)

__device__ __forceinline__ float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int nwarps = (blockDim.x + 31) / 32;
  v = lane < nwarps ? scratch[lane] : 0.0f;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) scratch[0] = v;
  __syncthreads();
  v = scratch[0];
  __syncthreads();  // scratch may be reused by the caller
  return v;
}

__global__ void rmsnorm(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ h, int D) {
  __shared__ float scratch[32];
  const float* xr = x + (int64_t)blockIdx.x * D;
  float* hr = h + (int64_t)blockIdx.x * D;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < D; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, scratch);
  const float inv = rsqrtf(ss / static_cast<float>(D) + kEps);
  for (int i = threadIdx.x; i < D; i += blockDim.x) hr[i] = xr[i] * inv * w[i];
}

constexpr int BM = 128, BN = 64, BK = 16, TM = 8, TN = 4;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
constexpr int kPad = 4;                          // keeps rows 16-byte aligned

enum Epilogue { kSwiGLU = 0, kResidual = 1 };

// C[M, N] = epilogue(A[M, K] . B0[N, K]^T, A . B1[N, K]^T).
template <int EPI>
__global__ void __launch_bounds__(kThreads)
    gemm_nt(const float* __restrict__ A, const float* __restrict__ B0, const float* __restrict__ B1,
            const float* __restrict__ R, float* __restrict__ C, int M, int N, int K) {
  constexpr bool kDual = EPI == kSwiGLU;
  __shared__ __align__(16) float As[BK][BM + kPad];
  __shared__ __align__(16) float Bs0[BK][BN + kPad];
  __shared__ __align__(16) float Bs1[kDual ? BK : 1][kDual ? BN + kPad : 1];

  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc0[TM][TN] = {};
  float acc1[kDual ? TM : 1][kDual ? TN : 1] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += kThreads) {
      const int r = i / BK, kk = i % BK;
      const int gr = m0 + r, gk = k0 + kk;
      As[kk][r] = (gr < M && gk < K) ? A[(int64_t)gr * K + gk] : 0.0f;
    }
    for (int i = tid; i < BN * BK; i += kThreads) {
      const int r = i / BK, kk = i % BK;
      const int gr = n0 + r, gk = k0 + kk;
      const bool ok = gr < N && gk < K;
      Bs0[kk][r] = ok ? B0[(int64_t)gr * K + gk] : 0.0f;
      if constexpr (kDual) Bs1[kk][r] = ok ? B1[(int64_t)gr * K + gk] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b0[TN], b1[TN];
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&As[kk][ty * TM + i]);
        a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
      }
      {
        const float4 v = *reinterpret_cast<const float4*>(&Bs0[kk][tx * TN]);
        b0[0] = v.x, b0[1] = v.y, b0[2] = v.z, b0[3] = v.w;
      }
      if constexpr (kDual) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs1[kk][tx * TN]);
        b1[0] = v.x, b1[1] = v.y, b1[2] = v.z, b1[3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          acc0[i][j] += a[i] * b0[j];
          if constexpr (kDual) acc1[i][j] += a[i] * b1[j];
        }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + ty * TM + i;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = n0 + tx * TN + j;
      if (col >= N) continue;
      const int64_t idx = (int64_t)row * N + col;
      if constexpr (kDual) {
        const float a = acc0[i][j];
        C[idx] = a / (1.0f + expf(-a)) * acc1[i][j];
      } else {
        C[idx] = R[idx] + acc0[i][j];
      }
    }
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 5 || n_outputs != 1) return 1;
  const kf_tensor& x = inputs[0];
  const kf_tensor& nw = inputs[1];
  const kf_tensor& wg = inputs[2];
  const kf_tensor& wu = inputs[3];
  const kf_tensor& wd = inputs[4];
  if (x.ndim < 1 || nw.ndim != 1 || wg.ndim != 2 || wu.ndim != 2 || wd.ndim != 2) return 2;
  const int64_t D = x.sizes[x.ndim - 1];
  const int64_t T = D > 0 ? kf_numel(&x) / D : 0;
  const int64_t H = wg.sizes[0];
  if (nw.sizes[0] != D || wg.sizes[1] != D || wu.sizes[0] != H || wu.sizes[1] != D ||
      wd.sizes[0] != D || wd.sizes[1] != H || kf_numel(&outputs[0]) != T * D)
    return 3;
  if (T == 0 || D == 0) return 0;
  if (T > 0x7fffffffLL || D > 0x7fffffffLL || H > 0x7fffffffLL || (T + BM - 1) / BM > 65535) return 5;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int t = static_cast<int>(T), d = static_cast<int>(D), hdim = static_cast<int>(H);

  float* h = nullptr;
  float* g = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void**>(&h), sizeof(float) * T * D, s) != cudaSuccess) return 6;
  if (cudaMallocAsync(reinterpret_cast<void**>(&g), sizeof(float) * T * H, s) != cudaSuccess) {
    cudaFreeAsync(h, s);
    return 6;
  }
  const float* xp = static_cast<const float*>(x.data);
  rmsnorm<<<t, 256, 0, s>>>(xp, static_cast<const float*>(nw.data), h, d);
  dim3 grid1((hdim + BN - 1) / BN, (t + BM - 1) / BM);
  gemm_nt<kSwiGLU><<<grid1, kThreads, 0, s>>>(h, static_cast<const float*>(wg.data),
                                               static_cast<const float*>(wu.data), nullptr, g, t,
                                               hdim, d);
  dim3 grid2((d + BN - 1) / BN, (t + BM - 1) / BM);
  gemm_nt<kResidual><<<grid2, kThreads, 0, s>>>(g, static_cast<const float*>(wd.data), nullptr, xp,
                                                 static_cast<float*>(outputs[0].data), t, d, hdim);
  const cudaError_t launched = cudaGetLastError();
  cudaFreeAsync(g, s);
  cudaFreeAsync(h, s);
  return launched == cudaSuccess ? 0 : 4;
}
