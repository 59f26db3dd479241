// reads_tmp (cpu): looks for other candidates' files, run records or the judge's scratch in
// /tmp and in the caller's home (what a kernel could copy, or learn the expected outputs
// from). The host's reads are limited by Landlock to the system's directories and the
// libraries it maps. Expected: pass (return 9, a runtime_error, would mean it could list them).
#include "kforge/kernel_abi.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <initializer_list>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  for (const char* dir : {"/tmp", "/root", "/home", "/work"})
    if (DIR* d = ::opendir(dir)) {
      ::closedir(d);
      return 9;
    }
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0, n = kf_numel(&outputs[0]); i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
