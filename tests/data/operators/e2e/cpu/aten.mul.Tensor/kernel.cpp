// aten.mul.Tensor for the cpu backend that holds only for the shapes its prompt showed (kforge's
// generalisation test, issue 24 §3; written for kforge): it multiplies 8 x 40 = 320 elements, the
// one shown case, whatever it is given. It passes the task and fails on unseen shapes.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int mul_kernel_impl(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                               const kf_arg* args, int n_args, void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1 || n_args < 2) return 1;
  const float* a = static_cast<const float*>(inputs[args[0].tensor].data);
  const float* b = static_cast<const float*>(inputs[args[1].tensor].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < 320; ++i) out[i] = a[i] * b[i];  // 8 x 40: the shown shape
  return 0;
}
