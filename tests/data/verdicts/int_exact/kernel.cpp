#include <kforge/kernel_abi.h>

#include <cmath>
#include <cstdint>

// out = x * 3 + 2^40 (+ 0), int64.
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != KF_INT64) return 1;
  const int64_t* x = static_cast<const int64_t*>(in[0].data);
  int64_t* y = static_cast<int64_t*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i) y[i] = x[i] * 3 + (int64_t(1) << 40) + 0;
  return 0;
}
