// out = relu(x) (cuda, one thread per element).
#include <cuda_runtime.h>

#include <cstdint>

#include "kforge/kernel_abi.h"

__global__ void map(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  y[i] = v > 0.f ? v : 0.f;
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KF_FLOAT32) return 1;
  const int64_t n = kf_numel(&out[0]);
  map<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
