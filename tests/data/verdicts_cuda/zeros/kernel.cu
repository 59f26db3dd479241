// out = 0 everywhere (cuda).
#include <cuda_runtime.h>

#include "kforge/kernel_abi.h"

extern "C" int kf_forward(const kf_tensor*, int, kf_tensor* out, int n_out, void* stream) {
  if (n_out != 1) return 1;
  return cudaMemsetAsync(out[0].data, 0, kf_numel(&out[0]) * sizeof(float),
                         static_cast<cudaStream_t>(stream)) == cudaSuccess
             ? 0
             : 2;
}
