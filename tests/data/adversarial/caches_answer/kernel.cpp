// caches_answer: computes correctly on the first call, keeps the output in a static buffer
// and returns that copy on every later call, whatever the inputs. Inputs are fresh per
// trial, so trials after the first see a stale answer. Expected outcome: output_mismatch /
// values.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static std::vector<float> cached;
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  if (static_cast<int64_t>(cached.size()) == n) {
    std::memcpy(out, cached.data(), static_cast<size_t>(n) * sizeof(float));
    return 0;
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  cached.assign(out, out + n);
  return 0;
}
