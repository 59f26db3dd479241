// first_seed_only: copies x[0] to the host, remembers its value on the first call, and is
// correct only while x[0] has that value; otherwise it writes garbage (1234.5). Passes a
// single-seed check, fails the second trial. Expected outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

__global__ void fill(float* out, int64_t n, float v) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = v;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const auto s = static_cast<cudaStream_t>(stream);
  const float* x = static_cast<const float*>(inputs[0].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  float x0 = 0.0f;
  if (cudaMemcpyAsync(&x0, x, sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess) return 2;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 2;
  static bool seen = false;
  static float first_x0 = 0.0f;
  if (!seen) {
    seen = true;
    first_x0 = x0;
  }
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  if (x0 == first_x0)
    relu2_add<<<blocks, 256, 0, s>>>(x, static_cast<const float*>(inputs[1].data), out, n);
  else
    fill<<<blocks, 256, 0, s>>>(out, n, 1234.5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
