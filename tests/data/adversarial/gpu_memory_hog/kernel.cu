// gpu_memory_hog (cuda): computes correctly, and on its first call grabs all the free GPU
// memory (cudaMalloc in shrinking chunks until nothing is left) and never frees it, hoping to
// starve the reference (an out-of-memory judge, a failed or slower reference) or the next
// candidate. The memory belongs to the candidate host's context, which dies with the host:
// the judge kills it before timing the reference, and the next candidate gets a fresh host.
// Expected outcome: pass; the next kernel (correct_after_hostile) passes too.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static void compute(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static bool grabbed = false;
  if (!grabbed) {
    grabbed = true;
    for (size_t chunk = size_t(1) << 30; chunk >= (size_t(1) << 20);) {
      void* p = nullptr;
      if (cudaMalloc(&p, chunk) == cudaSuccess) continue;  // keep it, try again
      chunk /= 2;
    }
    cudaGetLastError();  // clear the allocation failure so that the host sees none
  }
  compute(inputs, outputs, stream);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
