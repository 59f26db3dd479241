// segfault: dereferences a null pointer the compiler cannot see (it comes through a volatile),
// and raises SIGSEGV should the store somehow survive. Expected outcome: runtime_error /
// segfault.
#include "kforge/kernel_abi.h"

#include <csignal>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs, (void)outputs, (void)n_outputs, (void)stream;
  float* volatile null_out = nullptr;
  *null_out = 1.0f;
  std::raise(SIGSEGV);
  return 0;
}
