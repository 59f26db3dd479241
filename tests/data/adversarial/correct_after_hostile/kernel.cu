// correct_after_hostile: the correct kernel, judged right after the fd-exhausting, memory-hogging and
// file-dropping kernels: nothing they did outlives their candidate host. Expected outcome: pass.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add(const float* __restrict__ x, const float* __restrict__ y,
                          float* __restrict__ out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (inputs[0].dtype != KF_FLOAT32 || inputs[1].dtype != KF_FLOAT32) return 2;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  relu2_add<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
