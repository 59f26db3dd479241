// Deliberately slow, correct: normalization/layer_norm, one block of 256 threads per row; each
// thread stages 32 strided elements per chunk in shared memory; the layout
// s[j * 256 + tid] would be conflict-free, but they go to s[tid * 32 + j] (stride 32 floats):
// every shared access of a warp hits one bank, a 32-way bank conflict.
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

constexpr int kThreads = 256;
constexpr int kPer = 32;  // slots per thread in the shared staging area

__global__ void layer_norm_conflicts(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ b, float* __restrict__ y, int64_t dim,
                                     float eps) {
  __shared__ float s[kThreads * kPer];
  __shared__ float red[2][kThreads];
  const int tid = threadIdx.x;
  const float* xr = x + blockIdx.x * dim;
  float* yr = y + blockIdx.x * dim;
  float sum = 0.f, sq = 0.f;
  for (int64_t c0 = 0; c0 < dim; c0 += (int64_t)kThreads * kPer) {
    for (int j = 0; j < kPer; ++j) {
      const int64_t c = c0 + (int64_t)j * kThreads + tid;
      s[tid * kPer + j] = c < dim ? xr[c] : 0.f;  // stride-32 store: 32-way conflict
    }
    for (int j = 0; j < kPer; ++j) {
      const float v = s[tid * kPer + j];  // stride-32 load: 32-way conflict
      sum += v;
      sq += v * v;
    }
  }
  red[0][tid] = sum;
  red[1][tid] = sq;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if (tid < k) {
      red[0][tid] += red[0][tid + k];
      red[1][tid] += red[1][tid + k];
    }
    __syncthreads();
  }
  const float mean = red[0][0] / (float)dim;
  const float var = fmaxf(red[1][0] / (float)dim - mean * mean, 0.f);
  const float inv = rsqrtf(var + eps);
  for (int64_t c = tid; c < dim; c += kThreads) yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  // inputs: x [ROWS, DIM], weight [DIM], bias [DIM]; eps 1e-5 (the task's EPS).
  if (n_in != 3 || n_out != 1 || in[0].dtype != KF_FLOAT32 || in[0].ndim != 2) return 1;
  layer_norm_conflicts<<<(unsigned)in[0].sizes[0], kThreads, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (const float*)in[1].data, (const float*)in[2].data, (float*)out[0].data,
      in[0].sizes[1], 1e-5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
