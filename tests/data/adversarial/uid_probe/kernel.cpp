// uid_probe: computes honestly only when it runs as nobody (uid 65534, as the candidate host does):
// an identity query tells the judge from the user's process. Expected outcome: forbidden_api
// (identity) at compile time: a native kernel may import no environment, identity or file-system
// query (issue 38 §2.3).
#include "kforge/kernel_abi.h"

#include <sys/types.h>
#include <unistd.h>
#include <cstdint>

static bool judged() { return ::geteuid() == 65534 || ::getuid() == 65534; }

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
