// aten.relu.default for the cpu backend (kforge's operator-suite test; written for kforge): any
// rank up to 8, any strides of the input; the output is contiguous.
#include "kforge/kernel_abi.h"

#include <cstdint>

namespace {

/// The input's element offset of the i-th element in row-major order.
int64_t offset_of(const kf_tensor& t, int64_t i) {
  int64_t off = 0;
  for (int d = t.ndim - 1; d >= 0; --d) {
    off += (i % t.sizes[d]) * t.strides[d];
    i /= t.sizes[d];
  }
  return off;
}

}  // namespace

extern "C" int relu_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                                const kf_arg* args, int n_args, void* /*stream*/) {
  if (n_inputs != 1 || n_outputs != 1 || n_args < 1 || args[0].kind != KF_ARG_TENSOR) return 1;
  const kf_tensor& x = inputs[args[0].tensor];
  kf_tensor& y = outputs[0];
  if (x.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32 || kf_numel(&x) != kf_numel(&y)) return 2;
  const float* in = static_cast<const float*>(x.data);
  float* out = static_cast<float*>(y.data);
  const int64_t n = kf_numel(&y);
  for (int64_t i = 0; i < n; ++i) {
    const float v = in[offset_of(x, i)];
    out[i] = v > 0.0f ? v : 0.0f;
  }
  return 0;
}
