// aten.add.Tensor for the cuda backend (kforge's operator-suite test; written for kforge):
// out = self + alpha * other, float32, with broadcasting and any strides of the inputs.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>
#include <cstdint>
#include <cstring>

struct View {
  int ndim;
  int64_t sizes[KF_MAX_DIMS];
  int64_t strides[KF_MAX_DIMS];
};

__device__ int64_t offset_of(const View& t, const View& out, int64_t i) {
  int64_t off = 0;
  for (int d = out.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % out.sizes[d];
    i /= out.sizes[d];
    const int td = d - (out.ndim - t.ndim);
    if (td >= 0 && t.sizes[td] != 1) off += idx * t.strides[td];
  }
  return off;
}

__global__ void add_bcast(const float* a, View va, const float* b, View vb, float* out, View vo, float alpha,
                          int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i] = a[offset_of(va, vo, i)] + alpha * b[offset_of(vb, vo, i)];
}

static View view_of(const kf_tensor& t) {
  View v{t.ndim, {}, {}};
  for (int d = 0; d < t.ndim; ++d) v.sizes[d] = t.sizes[d], v.strides[d] = t.strides[d];
  return v;
}

extern "C" int add_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                               const kf_arg* args, int n_args, void* stream) {
  if (n_inputs != 2 || n_outputs != 1 || n_args < 2) return 1;
  if (args[0].kind != KF_ARG_TENSOR || args[1].kind != KF_ARG_TENSOR) return 1;
  double alpha = 1.0;
  for (int k = 2; k < n_args; ++k) {
    if (k != 2 && std::strcmp(args[k].name, "alpha") != 0) continue;
    if (args[k].kind == KF_ARG_INT) alpha = static_cast<double>(args[k].i);
    else if (args[k].kind == KF_ARG_FLOAT) alpha = args[k].f;
    else return 3;
  }
  const kf_tensor& a = inputs[args[0].tensor];
  const kf_tensor& b = inputs[args[1].tensor];
  kf_tensor& y = outputs[0];
  if (a.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  const int64_t n = kf_numel(&y);
  if (n == 0) return 0;
  const int blocks = (int)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
  add_bcast<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(a.data), view_of(a), static_cast<const float*>(b.data), view_of(b),
      static_cast<float*>(y.data), view_of(y), static_cast<float>(alpha), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
