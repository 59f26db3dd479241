// Deliberately slow, correct: fusion/add_layernorm with two tiny kernels launched per row
// (2 x TOKENS launches of one block each): launch overhead, not memory, sets the time.
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

constexpr int kThreads = 256;

__global__ void add_row(const float* __restrict__ x, const float* __restrict__ r, float* __restrict__ s,
                        int64_t dim) {
  for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) s[c] = x[c] + r[c];
}

__global__ void layer_norm_row(const float* __restrict__ s, const float* __restrict__ w,
                               const float* __restrict__ b, float* __restrict__ y, int64_t dim, float eps) {
  __shared__ float red[2][kThreads];
  float sum = 0.f, sq = 0.f;
  for (int64_t c = threadIdx.x; c < dim; c += kThreads) {
    sum += s[c];
    sq += s[c] * s[c];
  }
  red[0][threadIdx.x] = sum;
  red[1][threadIdx.x] = sq;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if ((int)threadIdx.x < k) {
      red[0][threadIdx.x] += red[0][threadIdx.x + k];
      red[1][threadIdx.x] += red[1][threadIdx.x + k];
    }
    __syncthreads();
  }
  const float mean = red[0][0] / (float)dim;
  const float inv = rsqrtf(fmaxf(red[1][0] / (float)dim - mean * mean, 0.f) + eps);
  for (int64_t c = threadIdx.x; c < dim; c += kThreads) y[c] = (s[c] - mean) * inv * w[c] + b[c];
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  // inputs: x, residual [TOKENS, DIM], weight, bias [DIM]; outputs: y, s [TOKENS, DIM]; eps 1e-5.
  if (n_in != 4 || n_out != 2 || in[0].dtype != KF_FLOAT32 || in[0].ndim != 2) return 1;
  const int64_t rows = in[0].sizes[0], dim = in[0].sizes[1];
  cudaStream_t st = (cudaStream_t)stream;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * dim;
    add_row<<<1, kThreads, 0, st>>>((const float*)in[0].data + o, (const float*)in[1].data + o,
                                    (float*)out[1].data + o, dim);
    layer_norm_row<<<1, kThreads, 0, st>>>((const float*)out[1].data + o, (const float*)in[2].data,
                                           (const float*)in[3].data, (float*)out[0].data + o, dim, 1e-5f);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
