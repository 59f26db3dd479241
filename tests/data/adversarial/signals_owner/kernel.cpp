// signals_owner (cpu): a route to signal another process without kill(): make it the owner of
// the host's channel (fcntl F_SETOWN) so that the kernel sends it SIGIO when data arrives. The
// seccomp filter traps F_SETOWN, F_SETSIG and F_SETOWN_EX (and the FIOSETOWN / SIOCSPGRP
// ioctls). Expected: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (::fcntl(3, F_SETOWN, static_cast<int>(::getppid())) == 0) return 9;  // the judge would get SIGIO
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0, n = kf_numel(&outputs[0]); i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
