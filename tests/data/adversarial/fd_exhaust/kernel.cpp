// fd_exhaust: computes correctly, but first opens /dev/null read-only (allowed) until the
// process runs out of descriptors and keeps them all, hoping to break the judge (which
// could not open a file any more) or the next candidate. The descriptors, and their limit
// (RLIMIT_NOFILE), belong to this candidate host, which is never reused: the judge and the
// next candidate are unaffected. Expected outcome: pass.
#include "kforge/kernel_abi.h"

#include <fcntl.h>

#include <cstdint>

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  for (int i = 0; i < 1 << 20 && ::open("/dev/null", O_RDONLY) >= 0; ++i) {
  }
  compute(inputs, outputs);
  return 0;
}
