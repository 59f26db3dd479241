// loss/huber_mean, cpu backend: mean over all elements of
//   0.5 d^2            if |d| < delta
//   delta (|d| - 0.5 delta) otherwise,       d = pred - target, delta = 1.
// Inputs: pred, target (same shape). Output: a 0-dim tensor.
// Each thread accumulates its share in double (a float running sum over millions of elements
// would drift past the tolerance); OpenMP combines the per-thread sums.
#include "kforge/kernel_abi.h"

#include <cmath>
#include <cstdint>

namespace {
constexpr float kDelta = 1.0f;  // DELTA of the task
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&inputs[0]);
  if (kf_numel(&inputs[1]) != n || kf_numel(&outputs[0]) != 1 || n == 0) return 2;
  const float* p = static_cast<const float*>(inputs[0].data);
  const float* t = static_cast<const float*>(inputs[1].data);
  double total = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (int64_t i = 0; i < n; ++i) {
    const float ad = std::fabs(p[i] - t[i]);
    const float l = ad < kDelta ? 0.5f * ad * ad : kDelta * (ad - 0.5f * kDelta);
    total += l;
  }
  static_cast<float*>(outputs[0].data)[0] = static_cast<float>(total / static_cast<double>(n));
  return 0;
}
