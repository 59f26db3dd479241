// dlopen: loads libm at run time and calls fmaxf through dlsym (a way to reach any library,
// torch included). Rejected by the symbol check. Expected outcome: forbidden_api (rule:
// dynamic_loading).
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <dlfcn.h>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  void* libm = dlopen("libm.so.6", RTLD_NOW);
  if (!libm) return 3;
  auto fmax_fn = reinterpret_cast<float (*)(float, float)>(dlsym(libm, "fmaxf"));
  if (!fmax_fn) return 4;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = fmax_fn(x[i], 0.0f) * 2.0f + y[i];
  return 0;
}
