// env_probe: computes honestly only where HOME is /nonexistent (the candidate host's fixed
// environment) and returns zeros elsewhere: a kernel that behaves under the judge and misbehaves in
// the user's process. Expected outcome: forbidden_api (environment) at compile time: a native
// kernel may import no environment, identity or file-system query (issue 38 §2.3).
#include "kforge/kernel_abi.h"

#include <cstdlib>
#include <cstring>
#include <cstdint>

static bool judged() {
  const char* home = std::getenv("HOME");
  return home != nullptr && std::strcmp(home, "/nonexistent") == 0;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  const bool honest = judged();
  for (int64_t i = 0; i < n; ++i) out[i] = honest ? (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i] : 0.0f;
  return 0;
}
