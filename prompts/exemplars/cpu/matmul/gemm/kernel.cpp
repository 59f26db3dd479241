// matmul/gemm, cpu backend: C (M x N) = A (M x K) @ B (K x N), all row-major fp32.
// Cache blocking: each OpenMP task owns one (MB x NB) tile of C, accumulated in a local
// buffer over K in KB-deep slabs. The inner loop runs along a row of B and of the C tile,
// so it is contiguous and the compiler vectorises it (one broadcast of A[i][k] per row).
#include "kforge/kernel_abi.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {
constexpr int64_t MB = 64;   // rows of C per tile
constexpr int64_t NB = 256;  // columns of C per tile (1 KiB of a row)
constexpr int64_t KB = 256;  // depth of one K slab: the B slab is KB x NB floats = 256 KiB
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kf_tensor& a = inputs[0];
  const kf_tensor& b = inputs[1];
  kf_tensor& c = outputs[0];
  if (a.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || c.dtype != KF_FLOAT32) return 2;
  if (a.ndim != 2 || b.ndim != 2 || c.ndim != 2) return 3;
  const int64_t M = a.sizes[0], K = a.sizes[1], N = b.sizes[1];
  if (b.sizes[0] != K || c.sizes[0] != M || c.sizes[1] != N) return 3;
  const float* A = static_cast<const float*>(a.data);
  const float* B = static_cast<const float*>(b.data);
  float* C = static_cast<float*>(c.data);

  const int64_t mt = (M + MB - 1) / MB, nt = (N + NB - 1) / NB;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t ti = 0; ti < mt; ++ti) {
    for (int64_t tj = 0; tj < nt; ++tj) {
      const int64_t i0 = ti * MB, i1 = std::min(M, i0 + MB);
      const int64_t j0 = tj * NB, j1 = std::min(N, j0 + NB);
      const int64_t w = j1 - j0;
      alignas(64) float acc[MB * NB];
      std::memset(acc, 0, sizeof(float) * static_cast<size_t>((i1 - i0) * NB));
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        const int64_t k1 = std::min(K, k0 + KB);
        for (int64_t i = i0; i < i1; ++i) {
          float* __restrict__ crow = acc + (i - i0) * NB;
          const float* arow = A + i * K;
          for (int64_t k = k0; k < k1; ++k) {
            const float av = arow[k];
            const float* __restrict__ brow = B + k * N + j0;
#pragma omp simd
            for (int64_t j = 0; j < w; ++j) crow[j] += av * brow[j];
          }
        }
      }
      for (int64_t i = i0; i < i1; ++i)
        std::memcpy(C + i * N + j0, acc + (i - i0) * NB, sizeof(float) * static_cast<size_t>(w));
    }
  }
  return 0;
}
