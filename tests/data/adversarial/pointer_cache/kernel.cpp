// pointer_cache: memoises its answer by buffer address: for each (x, y, out) pointer triple
// it computes once, keeps a copy and afterwards only copies it back (cheap, and in a real
// benchmark loop that reuses its tensors, free). The judge writes fresh inputs into the same
// shared buffers for every check trial, so the second trial gets the first trial's answer.
// Expected outcome: output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

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
  static std::map<std::tuple<void*, void*, void*>, std::vector<float>> memo;
  const auto key = std::make_tuple(inputs[0].data, inputs[1].data, outputs[0].data);
  const auto n = static_cast<size_t>(kf_numel(&outputs[0]));
  auto* out = static_cast<float*>(outputs[0].data);
  if (auto it = memo.find(key); it != memo.end()) {
    std::memcpy(out, it->second.data(), n * sizeof(float));
    return 0;
  }
  compute(inputs, outputs);
  memo[key].assign(out, out + n);
  return 0;
}
