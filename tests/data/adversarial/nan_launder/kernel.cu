// nan_launder (cuda): plants a NaN in one element of its input x (device memory shared by CUDA
// IPC, writable) and computes the output from the poisoned input, hoping the reference is
// computed from the same memory and so agrees at that element (NaN == NaN under equal_nan).
// The judge computes the reference from its own private copy and compares the shared inputs
// bit for bit with it after every call. Expected outcome: output_mismatch / input_modified.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void launder(float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float xi = i == n / 2 ? __int_as_float(0x7fc00000) : x[i];
  if (i == n / 2) x[i] = xi;
  out[i] = (i == n / 2) ? xi : fmaxf(xi, 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  launder<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
