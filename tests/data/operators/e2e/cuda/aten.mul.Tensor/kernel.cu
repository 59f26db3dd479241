// aten.mul.Tensor for the cuda backend that holds only for the shapes its prompt showed (kforge's
// generalisation test, issue 24 §3; written for kforge): one block of 320 threads, the 8 x 40
// elements of the one shown case, whatever it is given.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

__global__ void mul320(const float* a, const float* b, float* out) {
  out[threadIdx.x] = a[threadIdx.x] * b[threadIdx.x];
}

extern "C" int mul_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                               const kf_arg* args, int n_args, void* stream) {
  if (n_inputs != 2 || n_outputs != 1 || n_args < 2) return 1;
  mul320<<<1, 320, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[args[0].tensor].data),
                                                          static_cast<const float*>(inputs[args[1].tensor].data),
                                                          static_cast<float*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
