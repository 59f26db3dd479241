// aten.relu.default for the cuda backend (kforge's operator-suite test; written for kforge): any
// rank up to 8, any strides of the input; the output is contiguous. Runs on the given stream.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>
#include <cstdint>

struct View {
  int ndim;
  int64_t sizes[KF_MAX_DIMS];
  int64_t strides[KF_MAX_DIMS];
};

__global__ void relu_strided(const float* in, View v, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i, off = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
      off += (rest % v.sizes[d]) * v.strides[d];
      rest /= v.sizes[d];
    }
    const float x = in[off];
    out[i] = x > 0.0f ? x : 0.0f;
  }
}

extern "C" int relu_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                                const kf_arg* args, int n_args, void* stream) {
  if (n_inputs != 1 || n_outputs != 1 || n_args < 1 || args[0].kind != KF_ARG_TENSOR) return 1;
  const kf_tensor& x = inputs[args[0].tensor];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32 || kf_numel(&x) != kf_numel(&y)) return 2;
  View v{x.ndim, {}, {}};
  for (int d = 0; d < x.ndim; ++d) v.sizes[d] = x.sizes[d], v.strides[d] = x.strides[d];
  const int64_t n = kf_numel(&y);
  if (n == 0) return 0;
  const int blocks = (int)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
  relu_strided<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(x.data), v,
                                                                     static_cast<float*>(y.data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
