// aten.add.Tensor for the cpu backend (kforge's operator-suite test; written for kforge):
// out = self + alpha * other, float32, with broadcasting and any strides of the inputs.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cstring>

namespace {

/// The element offset in `t` of the output's i-th element (row-major over `out`), broadcasting
/// `t` against `out` (trailing dimensions aligned, size-1 dimensions repeated).
int64_t offset_of(const kf_tensor& t, const kf_tensor& out, int64_t i) {
  int64_t off = 0;
  for (int d = out.ndim - 1; d >= 0; --d) {
    const int64_t idx = i % out.sizes[d];
    i /= out.sizes[d];
    const int td = d - (out.ndim - t.ndim);
    if (td >= 0 && t.sizes[td] != 1) off += idx * t.strides[td];
  }
  return off;
}

}  // namespace

extern "C" int add_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                               const kf_arg* args, int n_args, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1 || n_args < 2) return 1;
  if (args[0].kind != KF_ARG_TENSOR || args[1].kind != KF_ARG_TENSOR) return 1;
  double alpha = 1.0;
  for (int k = 2; k < n_args; ++k) {
    const bool is_alpha = k == 2 || std::strcmp(args[k].name, "alpha") == 0;
    if (!is_alpha) continue;
    if (args[k].kind == KF_ARG_INT) alpha = static_cast<double>(args[k].i);
    else if (args[k].kind == KF_ARG_FLOAT) alpha = args[k].f;
    else return 3;
  }
  const kf_tensor& a = inputs[args[0].tensor];
  const kf_tensor& b = inputs[args[1].tensor];
  kf_tensor& y = outputs[0];
  if (a.dtype != KF_FLOAT32 || b.dtype != KF_FLOAT32 || y.dtype != KF_FLOAT32) return 2;
  const float* pa = static_cast<const float*>(a.data);
  const float* pb = static_cast<const float*>(b.data);
  float* out = static_cast<float*>(y.data);
  const float al = static_cast<float>(alpha);
  const int64_t n = kf_numel(&y);
  for (int64_t i = 0; i < n; ++i) out[i] = pa[offset_of(a, y, i)] + al * pb[offset_of(b, y, i)];
  return 0;
}
