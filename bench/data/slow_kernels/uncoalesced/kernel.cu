// Deliberately slow, correct: activation/gelu_tanh with consecutive threads walking down a
// column (thread t -> element (t % ROWS, t / ROWS)), so a warp's 32 loads touch 32 rows:
// uncoalesced global access, ~32 sectors per request instead of 4.
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

__global__ void gelu_column_major(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                  int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
       t += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = t % rows, c = t / rows;
    const float v = x[r * cols + c];
    y[r * cols + c] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KF_FLOAT32 || in[0].ndim != 2) return 1;
  const int64_t rows = in[0].sizes[0], cols = in[0].sizes[1];
  const int64_t blocks = (rows * cols + 255) / 256;
  gelu_column_major<<<(unsigned)(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
