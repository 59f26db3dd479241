// Deliberately slow, correct: normalization/rms_norm, one thread per row, each row staged
// through a 64-float per-thread buffer indexed at run time (local memory) under
// __launch_bounds__(1024, 2) (32 registers): local-memory loads/stores on every element.
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

__global__ void __launch_bounds__(1024, 2)
    rms_norm_spilling(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                      int64_t rows, int64_t dim, float eps) {
  const int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + row * dim;
  float buf[64];
  float ss = 0.f;
  for (int64_t c0 = 0; c0 < dim; c0 += 64) {
    const int m = (int)(dim - c0 < 64 ? dim - c0 : 64);
#pragma unroll 1
    for (int j = 0; j < m; ++j) buf[(j * 7) % m] = xr[c0 + (j * 7) % m];
#pragma unroll 1
    for (int j = 0; j < m; ++j) ss += buf[j] * buf[j];
  }
  const float inv = rsqrtf(ss / (float)dim + eps);
  for (int64_t c = 0; c < dim; ++c) y[row * dim + c] = xr[c] * inv * w[c];
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  // inputs: x [ROWS, DIM], weight [DIM]; eps is the module's attribute (1e-6 in the task).
  if (n_in != 2 || n_out != 1 || in[0].dtype != KF_FLOAT32 || in[0].ndim != 2) return 1;
  const int64_t rows = in[0].sizes[0], dim = in[0].sizes[1];
  rms_norm_spilling<<<(unsigned)((rows + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (const float*)in[1].data, (float*)out[0].data, rows, dim, 1e-6f);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
