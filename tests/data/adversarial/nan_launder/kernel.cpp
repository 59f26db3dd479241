// nan_launder: plants a NaN in one element of its input x and computes the output from the
// poisoned input, hoping the reference is computed from the same shared memory afterwards and
// so agrees at that element (NaN == NaN under equal_nan), which would launder a wrong element.
// It first tries to make the page writable (mprotect fails: the memfd was handed over
// read-only), then writes anyway. Inputs are mapped read-only in the candidate host: the write
// faults. Expected outcome: runtime_error / segfault.
#include "kforge/kernel_abi.h"

#include <sys/mman.h>

#include <cstdint>
#include <limits>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  auto* x = static_cast<float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  auto page = reinterpret_cast<uintptr_t>(x) & ~uintptr_t(4095);
  (void)::mprotect(reinterpret_cast<void*>(page), 4096, PROT_READ | PROT_WRITE);  // EACCES
  x[n / 2] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  out[n / 2] = std::numeric_limits<float>::quiet_NaN();
  return 0;
}
