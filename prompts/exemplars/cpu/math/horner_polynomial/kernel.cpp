// math/horner_polynomial, cpu backend: y = sum_k coeffs[k] x^k by Horner's rule, elementwise.
// Inputs: x [N], coeffs [DEGREE + 1]. The coefficients are copied once into a local array so the
// hot loop has no aliasing doubts; the loop over x is split across threads and vectorised.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <vector>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* /*stream*/) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&inputs[0]);
  const int64_t nc = kf_numel(&inputs[1]);
  if (nc < 1 || kf_numel(&outputs[0]) != n) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  const std::vector<float> c(static_cast<const float*>(inputs[1].data),
                             static_cast<const float*>(inputs[1].data) + nc);
  const float* cp = c.data();
  float* y = static_cast<float*>(outputs[0].data);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    float acc = cp[nc - 1];
    for (int64_t k = nc - 2; k >= 0; --k) acc = acc * v + cp[k];
    y[i] = acc;
  }
  return 0;
}
