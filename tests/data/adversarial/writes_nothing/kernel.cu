// writes_nothing: returns success without launching anything; the output keeps the runner's
// poison. Expected outcome: output_mismatch / unwritten.
#include "kforge/kernel_abi.h"

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs, (void)outputs, (void)n_outputs, (void)stream;
  return 0;
}
