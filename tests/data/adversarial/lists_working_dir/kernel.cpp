// lists_working_dir (cpu): looks around the host's working directory for something to learn
// (the kernels folder, other candidates, the run's records). The judge starts every host in an
// empty directory of its own. Expected: pass (return 9, a runtime_error, would mean the host
// saw files).
#include "kforge/kernel_abi.h"

#include <dirent.h>

#include <cstdint>
#include <cstring>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (DIR* d = ::opendir(".")) {
    int seen = 0;
    while (dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++seen;
    ::closedir(d);
    if (seen > 0) return 9;
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0, n = kf_numel(&outputs[0]); i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
