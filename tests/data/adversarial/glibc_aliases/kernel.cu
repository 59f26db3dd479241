// glibc_aliases (cuda): host code reaches process creation through glibc's internal aliases, declared by hand
// because no header names them: __fork (fork's alias) and _IO_popen (popen's). The child
// would run a shell command outside the sandbox. The compile-time symbol check lists glibc's
// aliases with the process rule. Expected outcome: forbidden_api (rule: process) at compile.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

extern "C" int __fork(void);
extern "C" FILE* _IO_popen(const char* command, const char* mode);

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (FILE* f = _IO_popen("cat /proc/$PPID/environ", "r")) (void)std::fgetc(f);
  if (__fork() == 0) return 0;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
