// modifies_input: uses its input x as scratch space (x <- relu(x) * 2, in place), then
// computes out = x + y. Its own output is right, but the inputs it was given are changed;
// a reference run on the same tensors afterwards sees relu(2 relu(x)) * 2 + y. Expected
// outcome: output_mismatch / input_modified.
#include "kforge/kernel_abi.h"

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  float* x = static_cast<float*>(inputs[0].data);  // the view is const; the data is not
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f;
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
  return 0;
}
