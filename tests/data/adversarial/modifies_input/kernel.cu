// modifies_input: uses its input x as scratch space (x <- relu(x) * 2, in place), then
// computes out = x + y. Its own output is right, but the inputs it was given are changed;
// a reference run on the same tensors afterwards sees relu(2 relu(x)) * 2 + y. Expected
// outcome: output_mismatch / input_modified.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_in_place(float* x, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = fmaxf(x[i], 0.0f) * 2.0f;
}

__global__ void add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const auto s = static_cast<cudaStream_t>(stream);
  float* x = static_cast<float*>(inputs[0].data);  // the view is const; the data is not
  const int64_t n = kf_numel(&outputs[0]);
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  relu2_in_place<<<blocks, 256, 0, s>>>(x, n);
  add<<<blocks, 256, 0, s>>>(x, static_cast<const float*>(inputs[1].data),
                             static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
