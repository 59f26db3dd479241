#include <kforge/kernel_abi.h>

#include <complex>
#include <cstdint>

// out = a * b elementwise over complex64 or complex128 (interleaved real, imaginary parts).
// Wrong on purpose: the imaginary part has the sign of its second term flipped.

template <typename C>
static void mul(const kf_tensor* in, kf_tensor* out) {
  const C* a = static_cast<const C*>(in[0].data);
  const C* b = static_cast<const C*>(in[1].data);
  C* y = static_cast<C*>(out[0].data);
  for (int64_t i = 0, n = kf_numel(&out[0]); i < n; ++i)
    y[i] = C(a[i].real() * b[i].real() - a[i].imag() * b[i].imag(),
             a[i].real() * b[i].imag() - a[i].imag() * b[i].real());
}

extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void*) {
  if (n_in != 2 || n_out != 1 || out[0].dtype != in[0].dtype) return 1;
  if (out[0].dtype == KF_COMPLEX64) return mul<std::complex<float>>(in, out), 0;
  if (out[0].dtype == KF_COMPLEX128) return mul<std::complex<double>>(in, out), 0;
  return 2;
}
