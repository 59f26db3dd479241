// matmul/gemm, cuda backend: C (M x N) = A (M x K) @ B (K x N), row-major fp32, fp32 FMA
// (no TF32, so results match the fp32 reference closely).
// Classic register-blocked SGEMM: a 256-thread block computes a 128 x 128 tile of C; each
// thread owns an 8 x 8 sub-tile (rows {4ty..4ty+3, 64+4ty..}, columns {4tx.., 64+4tx..}, a
// layout that makes the float4 shared-memory reads conflict-free). K is walked in slabs of 8:
// the A slab is stored transposed in shared memory so both operands are read as float4, and
// the next slab is fetched into registers while the current one is multiplied (two shared
// buffers, one __syncthreads per slab). Edges are handled by zero-filled loads and guarded
// stores, so any M, N, K works; 16-byte vector loads/stores are used only where alignment
// and bounds allow.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int BM = 128, BN = 128, BK = 8;

// Loads 4 consecutive floats p[col .. col+3] of one row (row length ld), zero outside
// [0, limit). vec: the row base and ld allow an aligned float4 load.
__device__ __forceinline__ float4 load4(const float* __restrict__ row, int64_t col, int64_t limit, bool vec) {
  if (vec && col + 3 < limit) return __ldg(reinterpret_cast<const float4*>(row + col));
  float4 r;
  r.x = col + 0 < limit ? __ldg(row + col + 0) : 0.f;
  r.y = col + 1 < limit ? __ldg(row + col + 1) : 0.f;
  r.z = col + 2 < limit ? __ldg(row + col + 2) : 0.f;
  r.w = col + 3 < limit ? __ldg(row + col + 3) : 0.f;
  return r;
}

__global__ void __launch_bounds__(256) sgemm_128x128(const float* __restrict__ A, const float* __restrict__ B,
                                                     float* __restrict__ C, int64_t M, int64_t N, int64_t K,
                                                     bool vec_a, bool vec_b, bool vec_c) {
  __shared__ __align__(16) float As[2][BK][BM];  // As[k][m]: A slab, transposed
  __shared__ __align__(16) float Bs[2][BK][BN];  // Bs[k][n]
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * BN;

  // Global -> register mapping: each thread fetches 4 floats of A (row a_r, k a_c..a_c+3)
  // and 4 floats of B (k b_r, columns b_c..b_c+3) per slab.
  const int a_r = tid / 2, a_c = (tid % 2) * 4;
  const int b_r = tid / 32, b_c = (tid % 32) * 4;
  const bool a_row_ok = m0 + a_r < M;
  const float* a_row = A + (m0 + a_r) * K;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  auto fetch = [&](int64_t k0, float4& ra, float4& rb) {
    ra = a_row_ok ? load4(a_row, k0 + a_c, K, vec_a) : make_float4(0.f, 0.f, 0.f, 0.f);
    if (k0 + b_r < K)
      rb = load4(B + (k0 + b_r) * N, n0 + b_c, N, vec_b);
    else
      rb = make_float4(0.f, 0.f, 0.f, 0.f);
  };
  auto stash = [&](int buf, const float4& ra, const float4& rb) {
    As[buf][a_c + 0][a_r] = ra.x;
    As[buf][a_c + 1][a_r] = ra.y;
    As[buf][a_c + 2][a_r] = ra.z;
    As[buf][a_c + 3][a_r] = ra.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_r][b_c]) = rb;
  };

  const int64_t tiles = (K + BK - 1) / BK;
  float4 ra, rb;
  fetch(0, ra, rb);
  stash(0, ra, rb);
  __syncthreads();

  for (int64_t t = 0; t < tiles; ++t) {
    const int cur = static_cast<int>(t & 1);
    const bool more = t + 1 < tiles;
    if (more) fetch((t + 1) * BK, ra, rb);  // in flight while we compute
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][k][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][k][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in iteration t - 1, which the barrier below (of that
    // iteration) has closed; this one is read again only after the next barrier.
    if (more) stash(cur ^ 1, ra, rb);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t r = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (r >= M) continue;
    float* crow = C + r * N;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t c = n0 + h * 64 + tx * 4;
      if (vec_c && c + 3 < N) {
        *reinterpret_cast<float4*>(crow + c) =
            make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (c + j < N) crow[c + j] = acc[i][h * 4 + j];
      }
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kf_tensor& a = inputs[0];
  const kf_tensor& b = inputs[1];
  kf_tensor& c = outputs[0];
  if (a.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || c.dtype != KF_FLOAT32) return 2;
  if (a.ndim != 2 || b.ndim != 2 || c.ndim != 2) return 3;
  const int64_t M = a.sizes[0], K = a.sizes[1], N = b.sizes[1];
  if (b.sizes[0] != K || c.sizes[0] != M || c.sizes[1] != N) return 3;
  if (M == 0 || N == 0) return 0;
  const int64_t grid_y = (M + BM - 1) / BM, grid_x = (N + BN - 1) / BN;
  if (grid_y > 65535 || grid_x > 2147483647LL) return 3;
  // A float4 at row r, column k is aligned when the base is and every row start is (K % 4).
  const bool vec_a = aligned16(a.data) && K % 4 == 0;
  const bool vec_b = aligned16(b.data) && N % 4 == 0;
  const bool vec_c = aligned16(c.data) && N % 4 == 0;
  dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  sgemm_128x128<<<grid, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(a.data), static_cast<const float*>(b.data), static_cast<float*>(c.data), M, N, K,
      vec_a, vec_b, vec_c);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
