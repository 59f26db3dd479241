#include <cuda_runtime.h>
#include <kforge/kernel_abi.h>

// out = a + b, float32, contiguous.
__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, void* stream) {
  if (n_inputs != 2 || n_outputs != 1 || inputs[0].dtype != KF_FLOAT32) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  add_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
