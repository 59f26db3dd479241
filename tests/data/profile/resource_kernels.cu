#include <cstdint>
__global__ void spill_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  float acc[64];
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
#pragma unroll
  for (int k = 0; k < 64; ++k) acc[k] = tile[(threadIdx.x + k * 7) % 256] * k;
  float s = 0;
  for (int k = 0; k < 64; ++k) s += acc[(k * 13 + i) % 64];
  if (i < n) y[i] = s;
}
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
extern "C" int kf_forward() {
  return 0;
}
__global__ void __launch_bounds__(1024, 2)
    heavy_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) v[k] = x[(i + k * 977) % n];
  float s = 0;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int k = 0; k < 48; ++k) s += v[k] * v[(k + r + 1) % 48];
  y[i] = s;
}
