// fingerprint_cache: memoises its answer by a fingerprint of the inputs (a hash of 16 sampled
// elements of x and y), betting that the timed repetitions replay the inputs it has seen
// (as a benchmark loop over the same tensors would) so that they become a hash plus a copy.
// The judge draws fresh inputs for every check trial and for every bench batch, so the cache
// never hits and every call computes: the attack gains nothing and costs the hashing. It is
// also never wrong: 16 random floats do not collide. Expected outcome: pass (honest time).
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

static uint64_t fingerprint(const kf_tensor* inputs) {
  uint64_t h = 1469598103934665603ull;
  for (int t = 0; t < 2; ++t) {
    const auto* v = static_cast<const uint32_t*>(inputs[t].data);
    const int64_t n = kf_numel(&inputs[t]);
    for (int k = 0; k < 8; ++k) h = (h ^ v[(n - 1) * k / 7]) * 1099511628211ull;
  }
  return h;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static std::unordered_map<uint64_t, std::vector<float>> memo;
  const auto n = static_cast<size_t>(kf_numel(&outputs[0]));
  auto* out = static_cast<float*>(outputs[0].data);
  const uint64_t h = fingerprint(inputs);
  if (auto it = memo.find(h); it != memo.end()) {
    std::memcpy(out, it->second.data(), n * sizeof(float));
    return 0;
  }
  compute(inputs, outputs);
  if (memo.size() < 256) memo[h].assign(out, out + n);
  return 0;
}
