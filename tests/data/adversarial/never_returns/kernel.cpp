// never_returns: spins forever (the asm statement is a side effect, so the compiler may not
// delete the loop). Expected outcome: timeout.
#include "kforge/kernel_abi.h"

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs, (void)outputs, (void)n_outputs, (void)stream;
  for (;;) {
    __asm__ __volatile__("" ::: "memory");
  }
  return 0;
}
