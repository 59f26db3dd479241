// The judge's one-pass float comparison: the per-element rule of compare() (tensor_check.cpp)
// folded into a few statistics, so that a passing output of several GB costs two reads of
// memory instead of the ~30 elementwise tensor operations and syncs of the detailed path.
//
// Plain C++ with no LibTorch, compiled both by the host compiler (the CPU path,
// tensor_check.cpp) and by nvcc (compare_cuda.cu), so that the two paths share one rule.
// The statistics only decide a pass: any failure is described by compare(), which also has
// the last word. Types are values; nothing here holds state or is shared between threads.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define KF_HD __host__ __device__
#else
#define KF_HD
#endif

namespace kforge::runner::fused {

/// The float dtypes the one-pass path reads (bit layouts of IEEE binary32/64/16 and bfloat16).
enum class FloatKind : int { f32 = 0, f64 = 1, f16 = 2, bf16 = 3 };

/// Pass 1, over the reference alone: what the tolerance's magnitude scaling and the
/// constant-output rule need (compare(): effective_atol(), the constant rejection).
struct ReferenceStats {
  uint64_t finite = 0;      ///< finite elements
  double sumsq = 0;         ///< sum of squares of the finite elements (for the RMS)
  double min = 0, max = 0;  ///< over the elements with non-finite ones read as 0 (as compare() does)
  bool any = false;         ///< min/max hold a value
};

/// Pass 2, over output and reference: the counts and error figures of compare().
struct OutputStats {
  uint64_t bad = 0;  ///< elements not within tolerance, or never written (poison survived)
  double max_abs = 0, max_rel = 0, max_ratio = 0;  ///< over written elements with a finite error
  double min = 0, max = 0;                         ///< of the output (for the constant-output rule)
  bool any = false;                                ///< min/max hold a value
  bool nan = false;                                ///< the output holds a NaN (min/max undefined)
};

/// The tolerance as compare() applies it.
struct Rule {
  double atol = 0, rtol = 0, effective_atol = 0;
  uint64_t poison_bits = 0;  ///< the dtype's poison pattern (an unwritten element)
};

KF_HD inline bool is_nan(double x) {
  return x != x;
}
KF_HD inline bool is_finite(double x) {
  return x - x == 0;
}  // false for NaN and +-inf
KF_HD inline double dmax(double a, double b) {
  return a > b ? a : b;
}
KF_HD inline double dmin(double a, double b) {
  return a < b ? a : b;
}
KF_HD inline double dabs(double a) {
  return a < 0 ? -a : a;
}
KF_HD inline double from_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}
KF_HD inline double infinity() {
  return from_bits(0x7FF0000000000000ULL);
}
KF_HD inline double quiet_nan() {
  return from_bits(0x7FF8000000000000ULL);
}

/// Element i of a contiguous buffer of `kind` as a double, and its raw bits.
KF_HD inline double load(const void* p, int64_t i, FloatKind kind, uint64_t* bits) {
  switch (kind) {
    case FloatKind::f32: {
      uint32_t u = static_cast<const uint32_t*>(p)[i];
      float f;
      std::memcpy(&f, &u, 4);
      *bits = u;
      return f;
    }
    case FloatKind::f64: {
      uint64_t u = static_cast<const uint64_t*>(p)[i];
      double d;
      std::memcpy(&d, &u, 8);
      *bits = u;
      return d;
    }
    case FloatKind::bf16: {
      uint16_t h = static_cast<const uint16_t*>(p)[i];
      uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      *bits = h;
      return f;
    }
    case FloatKind::f16: {
      uint16_t h = static_cast<const uint16_t*>(p)[i];
      *bits = h;
      const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
      const double v = exp == 0x1f ? (man ? quiet_nan() : infinity())
                                   : ::ldexp(exp ? 1.0 + man / 1024.0 : man / 1024.0,
                                             exp ? static_cast<int>(exp) - 15 : -14);
      return sign ? -v : v;
    }
  }
  return 0;
}

/// The working precision of compare(): float64 stays float64, every other float is float32.
KF_HD inline double to_work(double x, FloatKind kind) {
  return kind == FloatKind::f64 ? x : static_cast<double>(static_cast<float>(x));
}

KF_HD inline void fold_reference(ReferenceStats& s, double e) {
  const bool fin = is_finite(e);
  if (fin) {
    ++s.finite;
    s.sumsq += e * e;
  }
  const double v = fin ? e : 0.0;
  s.min = s.any ? dmin(s.min, v) : v;
  s.max = s.any ? dmax(s.max, v) : v;
  s.any = true;
}

KF_HD inline void merge(ReferenceStats& s, const ReferenceStats& o) {
  if (!o.any) return;
  s.finite += o.finite;
  s.sumsq += o.sumsq;
  s.min = s.any ? dmin(s.min, o.min) : o.min;
  s.max = s.any ? dmax(s.max, o.max) : o.max;
  s.any = true;
}

/// One element of compare()'s float rule: close when e is finite and |a - e| <= effective_atol +
/// rtol |e|, or a == e, or both NaN; an unwritten element (poison bits) is never close.
KF_HD inline void fold_output(OutputStats& s, double a, uint64_t a_bits, double e, FloatKind kind,
                              const Rule& r) {
  const bool unwritten = a_bits == r.poison_bits;
  const bool same = a == e || (is_nan(a) && is_nan(e));
  const double diff = to_work(dabs(a - e), kind);
  const double band_at_e = to_work(to_work(r.rtol, kind) * dabs(e), kind) + to_work(r.effective_atol, kind);
  // An infinite reference is matched only by itself (as torch.allclose): the band at an
  // infinity is infinite and would otherwise hold anything.
  const bool close = (is_finite(e) && diff <= to_work(band_at_e, kind)) || same;
  s.bad += (!close || unwritten) ? 1 : 0;
  const double d = same ? 0.0 : diff;
  if (is_finite(d) && !unwritten) {
    const double ea = is_finite(e) ? dabs(e) : 0.0;
    s.max_abs = dmax(s.max_abs, d);
    s.max_rel = dmax(s.max_rel, d / (ea + dmax(r.atol, 1e-12)));
    const double band = ea * r.rtol + r.effective_atol;
    s.max_ratio = dmax(s.max_ratio, band > 0 ? d / band : (d > 0 ? infinity() : 0.0));
  }
  if (is_nan(a)) s.nan = true;
  s.min = s.any ? dmin(s.min, a) : a;
  s.max = s.any ? dmax(s.max, a) : a;
  s.any = true;
}

KF_HD inline void merge(OutputStats& s, const OutputStats& o) {
  s.bad += o.bad;
  s.max_abs = dmax(s.max_abs, o.max_abs);
  s.max_rel = dmax(s.max_rel, o.max_rel);
  s.max_ratio = dmax(s.max_ratio, o.max_ratio);
  s.nan = s.nan || o.nan;
  if (!o.any) return;
  s.min = s.any ? dmin(s.min, o.min) : o.min;
  s.max = s.any ? dmax(s.max, o.max) : o.max;
  s.any = true;
}

}  // namespace kforge::runner::fused
