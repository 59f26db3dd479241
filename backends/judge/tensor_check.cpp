// Output poisoning, canary guards and the reference comparison of kforge-runner
// (docs/judge.md: poisoned outputs, per-dtype tolerances, a mismatch report).
#include <ATen/Parallel.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>

#include "compare_core.hpp"
#include "kforge/common/tolerance.hpp"
#include "runner.hpp"
#ifdef KFORGE_RUNNER_CUDA
#include "compare_cuda.hpp"
#endif

namespace kforge::runner {

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kDouble:
      return "float64";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kBool:
      return "bool";
    case at::kByte:
      return "uint8";
    case at::kChar:
      return "int8";
    case at::kShort:
      return "int16";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    default:
      return "unsupported";
  }
}

at::ScalarType scalar_type_of(const std::string& name) {
  static const std::map<std::string, at::ScalarType> kTypes{{"float32", at::kFloat},
                                                            {"float16", at::kHalf},
                                                            {"bfloat16", at::kBFloat16},
                                                            {"float64", at::kDouble},
                                                            {"int32", at::kInt},
                                                            {"int64", at::kLong},
                                                            {"bool", at::kBool},
                                                            {"uint8", at::kByte},
                                                            {"int8", at::kChar},
                                                            {"int16", at::kShort},
                                                            {"complex64", at::kComplexFloat},
                                                            {"complex128", at::kComplexDouble}};
  auto it = kTypes.find(name);
  if (it == kTypes.end()) throw std::runtime_error("unsupported tensor dtype " + name);
  return it->second;
}

kf_dtype to_kf_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return KF_FLOAT32;
    case at::kHalf:
      return KF_FLOAT16;
    case at::kBFloat16:
      return KF_BFLOAT16;
    case at::kDouble:
      return KF_FLOAT64;
    case at::kInt:
      return KF_INT32;
    case at::kLong:
      return KF_INT64;
    case at::kBool:
      return KF_BOOL;
    case at::kByte:
      return KF_UINT8;
    case at::kChar:
      return KF_INT8;
    case at::kShort:
      return KF_INT16;
    case at::kComplexFloat:
      return KF_COMPLEX64;
    case at::kComplexDouble:
      return KF_COMPLEX128;
    default:
      throw std::runtime_error("dtype " + std::string(c10::toString(t)) + " has no kf_dtype");
  }
}

kf_tensor to_kf(const at::Tensor& t) {
  kf_tensor k{};
  if (t.dim() > KF_MAX_DIMS) throw std::runtime_error("tensor rank exceeds KF_MAX_DIMS");
  k.data = t.data_ptr();
  k.dtype = to_kf_dtype(t.scalar_type());
  k.ndim = static_cast<int32_t>(t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) {
    k.sizes[i] = t.size(i);
    k.strides[i] = t.stride(i);
  }
  k.device = t.is_cuda() ? static_cast<int32_t>(t.get_device()) : -1;
  return k;
}

std::pair<double, double> Tolerances::for_dtype(const std::string& dtype) const {
  // A complex dtype's real and imaginary parts are judged by their component dtype's tolerance.
  if (dtype == "complex64") return for_dtype("float32");
  if (dtype == "complex128") return for_dtype("float64");
  if (auto it = by_dtype.find(dtype); it != by_dtype.end()) return it->second;
  if (auto it = by_dtype.find("*"); it != by_dtype.end()) return it->second;
  const AtolRtol t = kernelbench_tolerance(dtype);
  return {t.atol, t.rtol};
}

namespace {

// The integer type of the same width, and the poison bit pattern for each dtype: quiet NaNs
// with a payload for floats (a kernel's own NaN has a different pattern), unlikely values
// for integers, and a byte that is no valid bool.
std::pair<at::ScalarType, int64_t> poison_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kComplexFloat:
      return {at::kInt, 0x7FCADEAD};
    case at::kDouble:
    case at::kComplexDouble:  // both parts (poison_mask reads complex tensors through view_as_real)
      return {at::kLong, 0x7FF8DEADBEEFCAFELL};
    case at::kHalf:
      return {at::kShort, 0x7E5A};
    case at::kBFloat16:
      return {at::kShort, 0x7FDA};
    case at::kInt:
      return {at::kInt, 0x7BADF00D};
    case at::kLong:
      return {at::kLong, 0x7BADF00DDEADBEEFLL};
    case at::kShort:
      return {at::kShort, 0x7BAD};
    case at::kBool:
      return {at::kByte, 0x5A};
    case at::kByte:
      return {at::kByte, 0x5A};
    case at::kChar:
      return {at::kChar, 0x5A};
    default:
      throw std::runtime_error("no poison for dtype " + std::string(c10::toString(t)));
  }
}

std::string index_str(const std::vector<int64_t>& idx) {
  std::string s = "[";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

std::vector<int64_t> unravel(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = sizes[d] ? flat % sizes[d] : 0;
    flat = sizes[d] ? flat / sizes[d] : 0;
  }
  return idx;
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

GuardedOutput make_guarded_output(const std::vector<int64_t>& shape, at::ScalarType dtype,
                                  const at::Device& device) {
  GuardedOutput g;
  int64_t numel = 1;
  for (auto s : shape) numel *= s;
  g.guard = std::max<int64_t>(1024, 4096 / static_cast<int64_t>(c10::elementSize(dtype)));
  g.storage = at::empty({numel + 2 * g.guard}, at::TensorOptions().dtype(dtype).device(device));
  auto [itype, pattern] = poison_of(dtype);
  g.storage.view(itype).fill_(pattern);
  g.view = g.storage.narrow(0, g.guard, numel).view(shape);
  return g;
}

at::Tensor poison_mask(const at::Tensor& t) {
  if (t.is_complex()) return poison_mask(at::view_as_real(t.contiguous()));  // per part: [..., 2]
  auto [itype, pattern] = poison_of(t.scalar_type());
  return t.contiguous().view(itype).eq(pattern);
}

bool guards_intact(const GuardedOutput& g) {
  int64_t n = g.storage.numel();
  auto head = g.storage.narrow(0, 0, g.guard);
  auto tail = g.storage.narrow(0, n - g.guard, g.guard);
  return poison_mask(head).all().item<bool>() && poison_mask(tail).all().item<bool>();
}

double effective_atol(double atol, double rms_expected, at::ScalarType dtype) {
  double floor = std::numeric_limits<float>::min();
  if (dtype == at::kDouble) floor = std::numeric_limits<double>::min();
  if (dtype == at::kHalf) floor = 5.9604644775390625e-08;  // 2^-24
  return std::max(floor, std::min(atol, kAtolScale * rms_expected));
}

namespace {
Comparison compare_values(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol,
                          double rms_expected, bool complex_parts);
}  // namespace

Comparison compare(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol,
                   double rms_expected) {
  Comparison c;
  c.numel = expected.numel();
  if (actual.sizes() != expected.sizes()) {
    c.ok = false;
    c.sub_kind = "shape";
    std::ostringstream m;
    m << "shape mismatch: expected " << expected.sizes() << ", got " << actual.sizes();
    c.message = m.str();
    return c;
  }
  if (actual.scalar_type() != expected.scalar_type()) {
    c.ok = false;
    c.sub_kind = "dtype";
    c.message = "dtype mismatch: expected " + dtype_name(expected.scalar_type()) + ", got " +
                dtype_name(actual.scalar_type());
    return c;
  }
  if (c.numel == 0) return c;
  // Complex outputs: the real and imaginary parts, each against the component dtype's tolerance
  // (complex64: float32's; Tolerances::for_dtype), through a [..., 2] view of each tensor.
  if (expected.is_complex())
    return compare_values(at::view_as_real(actual.contiguous()), at::view_as_real(expected.contiguous()), tol,
                          rms_expected, true);
  return compare_values(actual, expected, tol, rms_expected, false);
}

namespace {

/// The element-wise comparison of compare_values: which elements are close, their errors, and
/// the two tensors in the dtype the errors are reported in (float32/float64 for floats, float64
/// for integers and bool).
struct Elementwise {
  at::Tensor close, diff, a, e;
};

/// Floats compare in float32 (float64 for float64) within the tolerance, its atol scaled by the
/// reference's magnitude (fills c.effective_atol and c.nan_inf); integers and bool exactly.
Elementwise elementwise(const at::Tensor& actual, const at::Tensor& expected, double atol, double rtol,
                        double rms_expected, const at::Tensor& unwritten, Comparison& c) {
  Elementwise w;
  if (at::isFloatingType(expected.scalar_type())) {
    auto work = expected.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    w.a = actual.to(work);
    w.e = expected.to(work);
    // Scale: atol is a floor for values near zero; where the reference's values are small next
    // to it, it shrinks with their root-mean-square (effective_atol), so an all-zero output is
    // not "close" to a softmax over many classes (KernelBench issue #165).
    double rms = rms_expected;
    if (rms < 0) {
      auto finite_e = w.e.isfinite();
      const int64_t n_finite = finite_e.sum().item<int64_t>();
      rms = n_finite ? std::sqrt(at::sum(w.e.masked_fill(~finite_e, 0).square(), at::kDouble).item<double>() /
                                 static_cast<double>(n_finite))
                     : 0.0;
    }
    c.effective_atol = effective_atol(atol, rms, expected.scalar_type());
    w.diff = (w.a - w.e).abs();
    const auto same = w.a.eq(w.e) | (w.a.isnan() & w.e.isnan());
    // An infinite reference is matched only by itself (as torch.allclose does).
    w.close = (w.diff.le(c.effective_atol + rtol * w.e.abs()) & w.e.isfinite()) | same;
    auto bad_nonfinite = (w.a.isnan() | w.a.isinf()) & ~(w.e.isnan() | w.e.isinf());
    c.nan_inf = (bad_nonfinite & ~unwritten).sum().item<int64_t>();
    w.diff = w.diff.masked_fill(same, 0);
  } else {
    // Integers and bool compare exactly in their own dtype: a conversion to float32 would make
    // distinct int64 values above 2^24 equal. Errors are reported in float64.
    c.effective_atol = 0;
    w.close = actual.eq(expected);
    w.a = actual.to(at::kDouble);
    w.e = expected.to(at::kDouble);
    w.diff = (w.a - w.e).abs().masked_fill(w.close, 0);
  }
  return w;
}

/// Error figures over the written elements with finite errors, on passes too: max abs error,
/// max relative error with a floor, |a - e| / (|e| + atol) (so near-zero references do not
/// dominate), and the tolerance ratio max |a - e| / (atol_eff + rtol |e|) (<= 1 passes).
void error_figures(const Elementwise& w, const at::Tensor& unwritten, double atol, double rtol,
                   Comparison& c) {
  auto counted = w.diff.isfinite() & ~unwritten;
  if (!counted.any().item<bool>()) return;
  auto d = w.diff.masked_fill(~counted, 0);
  auto ea = w.e.abs().masked_fill(~w.e.isfinite(), 0);
  c.max_abs = d.max().item<double>();
  c.max_rel = (d / (ea + std::max(atol, 1e-12))).max().item<double>();
  auto band = ea * rtol + c.effective_atol;
  auto ratio = at::where(band.gt(0), d / band.clamp_min(1e-300), at::where(d.gt(0), INFINITY, 0.0));
  c.tolerance_ratio = ratio.max().item<double>();
}

/// A constant output (all zeros included) where the reference is not constant: whatever the
/// tolerance said, the kernel did not compute the function. "Not constant": the reference's
/// spread exceeds its relative tolerance at its largest value. Fails `c` when so.
void reject_constant(const Elementwise& w, double rtol, at::IntArrayRef sizes, bool complex_parts,
                     Comparison& c) {
  const double amin = w.a.min().item<double>(), amax = w.a.max().item<double>();
  auto ef = w.e.masked_fill(~w.e.isfinite(), 0);
  const double emin = ef.min().item<double>(), emax = ef.max().item<double>();
  const double emag = std::max(std::fabs(emin), std::fabs(emax));
  if (amin == amax && emax - emin > rtol * emag && emax - emin > 0) {
    c.ok = false;
    c.sub_kind = "values";
    c.worst_index = unravel((w.e - amin).abs().flatten().argmax().item<int64_t>(), sizes);
    if (complex_parts) c.worst_index.pop_back();
    c.message = "the output is constant (every element is " + num(amin) +
                ") but the reference is not (it ranges from " + num(emin) + " to " + num(emax) +
                "); a constant or all-zero output is rejected whatever the tolerance";
  }
}

/// compare() once shapes and dtypes agree. complex_parts: the tensors are view_as_real views of
/// complex ones ([..., 2]); indices in the message name the complex element and the part.
Comparison compare_values(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol,
                          double rms_expected, bool complex_parts) {
  Comparison c;
  c.numel = expected.numel();
  auto where = [&](const std::vector<int64_t>& idx) {
    if (!complex_parts || idx.empty()) return index_str(idx);
    std::vector<int64_t> element(idx.begin(), idx.end() - 1);
    return index_str(element) + (idx.back() == 0 ? " (real part)" : " (imaginary part)");
  };
  const std::string dt = dtype_name(expected.scalar_type());
  const std::string shown_dt =
      complex_parts ? (dt == "float64" ? "complex128" : "complex64") + std::string(", each part as ") + dt
                    : dt;
  // Where the expected value is the poison pattern itself (an int8 of 90, say), a surviving
  // poison is the right value, not an unwritten element.
  auto unwritten = poison_mask(actual) & ~poison_mask(expected);
  c.unwritten = unwritten.sum().item<int64_t>();
  const bool is_float = at::isFloatingType(expected.scalar_type());
  auto [atol, rtol] = tol.for_dtype(dt);
  c.atol = atol;
  c.rtol = rtol;
  Elementwise w = elementwise(actual, expected, atol, rtol, rms_expected, unwritten, c);
  w.close = w.close & ~unwritten;
  c.mismatched = c.numel - w.close.sum().item<int64_t>();
  error_figures(w, unwritten, atol, rtol, c);
  if (c.mismatched == 0) {
    if (is_float && c.numel >= 2) reject_constant(w, rtol, expected.sizes(), complex_parts, c);
    return c;
  }
  c.ok = false;
  // Worst element: the largest error, NaN/Inf and poison counted as infinite.
  auto score = w.diff.nan_to_num(INFINITY, INFINITY, INFINITY)
                   .masked_fill(unwritten, INFINITY)
                   .masked_fill(w.close, -1.0);
  int64_t worst = score.flatten().argmax().item<int64_t>();
  c.worst_index = unravel(worst, expected.sizes());
  c.expected = w.e.flatten()[worst].item<double>();
  c.actual = w.a.flatten()[worst].item<double>();
  std::string exp_s = num(c.expected), act_s = num(c.actual);
  if (!is_float) {  // exact integers in the message
    exp_s = std::to_string(expected.flatten()[worst].to(at::kLong).item<int64_t>());
    act_s = std::to_string(actual.flatten()[worst].to(at::kLong).item<int64_t>());
  }
  std::ostringstream m;
  double frac = 100.0 * static_cast<double>(c.mismatched) / static_cast<double>(c.numel);
  const char* what = complex_parts ? " real and imaginary parts (" : " elements (";
  m << c.mismatched << " of " << c.numel << what << num(frac) << "%) differ";
  if (c.unwritten > 0) {
    c.sub_kind = "unwritten";
    m << "; " << c.unwritten << (complex_parts ? " parts" : " elements")
      << " were never written (the poison value survived), e.g. at "
      << where(unravel(unwritten.flatten().nonzero().flatten()[0].item<int64_t>(), expected.sizes()));
  } else if (c.nan_inf > 0) {
    c.sub_kind = "nan_inf";
    m << "; " << c.nan_inf << " are NaN/Inf where the reference is finite";
  } else {
    c.sub_kind = "values";
  }
  m << "; worst at " << where(c.worst_index) << ": expected " << exp_s << ", got " << act_s;
  if (is_float) {
    m << "; max abs error " << num(c.max_abs) << ", max rel error " << num(c.max_rel)
      << " (|out - ref| / (|ref| + atol)), tolerance ratio " << num(c.tolerance_ratio)
      << " (tolerance atol=" << num(atol);
    if (c.effective_atol < atol) m << ", scaled to " << num(c.effective_atol) << " by the output's magnitude";
    m << " rtol=" << num(rtol) << ", dtype " << shown_dt << ")";
  } else {
    m << " (" << dt << " outputs must match exactly)";
  }
  c.message = m.str();
  if (complex_parts && !c.worst_index.empty()) c.worst_index.pop_back();  // the complex element's index
  return c;
}

}  // namespace

}  // namespace kforge::runner

namespace kforge::runner {

void poison_fill(at::Tensor& t) {
  auto [itype, pattern] = poison_of(t.scalar_type());
  (t.is_complex() ? at::view_as_real(t) : t).view(itype).fill_(pattern);
}

}  // namespace kforge::runner

namespace kforge::runner {

namespace {

std::optional<fused::FloatKind> float_kind(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return fused::FloatKind::f32;
    case at::kDouble:
      return fused::FloatKind::f64;
    case at::kHalf:
      return fused::FloatKind::f16;
    case at::kBFloat16:
      return fused::FloatKind::bf16;
    default:
      return std::nullopt;
  }
}

/// Both passes of the one-pass rule over contiguous host or device buffers of n elements. False
/// when the device path failed (the caller falls back to compare()).
bool fused_stats(const at::Tensor& a, const at::Tensor& e, fused::FloatKind kind, const Tolerances& tol,
                 fused::Rule* rule, fused::ReferenceStats* rs, fused::OutputStats* os) {
  const int64_t n = e.numel();
  const void *ap = a.data_ptr(), *ep = e.data_ptr();
  auto [atol, rtol] = tol.for_dtype(dtype_name(e.scalar_type()));
  rule->atol = atol;
  rule->rtol = rtol;
  rule->poison_bits = static_cast<uint64_t>(poison_of(e.scalar_type()).second);
  auto finish_rule = [&] {
    const double rms = rs->finite ? std::sqrt(rs->sumsq / static_cast<double>(rs->finite)) : 0.0;
    rule->effective_atol = effective_atol(atol, rms, e.scalar_type());
  };
  if (e.is_cuda()) {
#ifdef KFORGE_RUNNER_CUDA
    auto scratch = at::empty({static_cast<int64_t>(fused::cuda_scratch_bytes())},
                             at::TensorOptions().dtype(at::kByte).device(e.device()));
    if (!fused::cuda_reference_stats(ep, n, kind, scratch.data_ptr(), rs).empty()) return false;
    finish_rule();
    return fused::cuda_output_stats(ap, ep, n, kind, *rule, scratch.data_ptr(), os).empty();
#else
    return false;
#endif
  }
  std::mutex mu;
  constexpr int64_t kGrain = int64_t{1} << 16;
  at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t end) {
    fused::ReferenceStats part;
    uint64_t bits = 0;
    for (int64_t i = b; i < end; ++i) fused::fold_reference(part, fused::load(ep, i, kind, &bits));
    std::lock_guard<std::mutex> lock(mu);
    fused::merge(*rs, part);
  });
  finish_rule();
  at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t end) {
    fused::OutputStats part;
    uint64_t a_bits = 0, e_bits = 0;
    for (int64_t i = b; i < end; ++i) {
      const double av = fused::load(ap, i, kind, &a_bits);
      fused::fold_output(part, av, a_bits, fused::load(ep, i, kind, &e_bits), kind, *rule);
    }
    std::lock_guard<std::mutex> lock(mu);
    fused::merge(*os, part);
  });
  return true;
}

}  // namespace

std::optional<Comparison> fused_pass(const at::Tensor& actual, const at::Tensor& expected,
                                     const Tolerances& tol) {
  const auto kind = float_kind(expected.scalar_type());
  if (!kind || actual.sizes() != expected.sizes() || actual.scalar_type() != expected.scalar_type() ||
      actual.device() != expected.device() || expected.numel() == 0)
    return std::nullopt;
  const at::Tensor a = actual.contiguous(), e = expected.contiguous();
  fused::Rule rule;
  fused::ReferenceStats rs;
  fused::OutputStats os;
  if (!fused_stats(a, e, *kind, tol, &rule, &rs, &os) || os.bad > 0) return std::nullopt;
  // compare()'s constant-output rule: a constant output where the reference varies beyond its
  // relative tolerance at its largest value.
  const double emag = std::max(std::fabs(rs.min), std::fabs(rs.max)), spread = rs.max - rs.min;
  if (e.numel() >= 2 && !os.nan && os.min == os.max && spread > rule.rtol * emag && spread > 0)
    return std::nullopt;
  Comparison c;
  c.numel = e.numel();
  c.atol = rule.atol;
  c.rtol = rule.rtol;
  c.effective_atol = rule.effective_atol;
  c.max_abs = os.max_abs;
  c.max_rel = os.max_rel;
  c.tolerance_ratio = os.max_ratio;
  return c;
}

Comparison compare_chunked(const at::Tensor& actual, const at::Tensor& expected, const Tolerances& tol) {
  // Complex: compare() splits the parts; a large complex output goes through it in one piece.
  if (expected.is_complex() || actual.is_complex()) return compare(actual, expected, tol);
  if (auto pass = fused_pass(actual, expected, tol)) return *pass;
  constexpr int64_t kChunk = int64_t{1} << 27;
  if (expected.numel() <= kChunk || actual.sizes() != expected.sizes() ||
      actual.scalar_type() != expected.scalar_type())
    return compare(actual, expected, tol);
  auto a = actual.reshape({-1}), e = expected.reshape({-1});
  const int64_t n = e.numel();
  double rms = -1;
  if (at::isFloatingType(e.scalar_type())) {
    double sum = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; i += kChunk) {
      auto x = e.narrow(0, i, std::min(kChunk, n - i));
      auto f = x.isfinite();
      finite += f.sum().item<int64_t>();
      sum += at::sum(x.masked_fill(~f, 0).square(), at::kDouble).item<double>();
    }
    rms = finite ? std::sqrt(sum / static_cast<double>(finite)) : 0.0;
  }
  Comparison all;
  all.numel = n;
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t len = std::min(kChunk, n - i);
    Comparison c = compare(a.narrow(0, i, len), e.narrow(0, i, len), tol, rms);
    all.atol = c.atol;
    all.rtol = c.rtol;
    all.effective_atol = c.effective_atol;
    all.max_abs = std::max(all.max_abs, c.max_abs);
    all.max_rel = std::max(all.max_rel, c.max_rel);
    all.tolerance_ratio = std::max(all.tolerance_ratio, c.tolerance_ratio);
    all.unwritten += c.unwritten;
    all.nan_inf += c.nan_inf;
    all.mismatched += c.mismatched;
    if (!c.ok) {  // the first failing slice decides; its index is made global
      c.numel = n;
      c.max_abs = all.max_abs;
      c.max_rel = all.max_rel;
      c.tolerance_ratio = all.tolerance_ratio;
      if (!c.worst_index.empty()) c.worst_index = unravel(i + c.worst_index[0], expected.sizes());
      c.message = "in elements " + std::to_string(i) + ".." + std::to_string(i + len - 1) + ": " + c.message;
      return c;
    }
  }
  return all;
}

}  // namespace kforge::runner

namespace kforge::runner {

namespace {

/// `msg` with every " at [k]" (an index into the kept elements) replaced by the element's index
/// in the original tensor: positions[k] unravelled over `sizes`.
std::string remap_indices(const std::string& msg, const at::Tensor& positions, at::IntArrayRef sizes) {
  std::string out;
  std::size_t i = 0;
  for (std::size_t p; (p = msg.find(" at [", i)) != std::string::npos;) {
    std::size_t q = p + 5, e = q;
    while (e < msg.size() && std::isdigit(static_cast<unsigned char>(msg[e]))) ++e;
    out += msg.substr(i, q - i - 1);
    if (e == q || e >= msg.size() || msg[e] != ']') {
      out += "[";
      i = q;
      continue;
    }
    const int64_t k = std::stoll(msg.substr(q, e - q));
    out += k < positions.numel() ? index_str(unravel(positions[k].item<int64_t>(), sizes))
                                 : msg.substr(q - 1, e - q + 2);
    i = e + 1;
  }
  return out + msg.substr(i);
}

}  // namespace

Comparison compare_masked(const at::Tensor& actual, const at::Tensor& expected, const at::Tensor& keep,
                          const Tolerances& tol) {
  if (actual.sizes() != expected.sizes() || actual.scalar_type() != expected.scalar_type() ||
      keep.sizes() != expected.sizes())
    return compare_chunked(actual, expected, tol);
  const at::Tensor positions = keep.reshape({-1}).to(expected.device()).nonzero().flatten();
  Comparison c = compare_chunked(actual.reshape({-1}).index_select(0, positions),
                                 expected.reshape({-1}).index_select(0, positions), tol);
  if (!c.worst_index.empty() && c.worst_index[0] < positions.numel())
    c.worst_index = unravel(positions[c.worst_index[0]].item<int64_t>(), expected.sizes());
  c.message = remap_indices(c.message, positions.cpu(), expected.sizes());
  return c;
}

Comparison compare_with_truth(const at::Tensor& actual, const at::Tensor& expected, const at::Tensor& truth,
                              const Comparison& failed) {
  if (failed.sub_kind != "values" || !at::isFloatingType(expected.scalar_type()) ||
      truth.sizes() != expected.sizes() || actual.sizes() != expected.sizes())
    return failed;
  constexpr int64_t kChunk = int64_t{1} << 26;
  auto a32 = actual.reshape({-1}), e32 = expected.reshape({-1}), t = truth.reshape({-1});
  const int64_t n = e32.numel();
  // The reference's own error: its root-mean-square over the elements where both are finite.
  double sumsq = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t len = std::min(kChunk, n - i);
    auto e = e32.narrow(0, i, len).to(at::kDouble), tr = t.narrow(0, i, len).to(at::kDouble);
    auto both = e.isfinite() & tr.isfinite();
    finite += both.sum().item<int64_t>();
    sumsq += (e - tr).masked_fill(~both, 0).square().sum().item<double>();
  }
  const double own_rms = finite ? std::sqrt(sumsq / static_cast<double>(finite)) : 0.0;
  Comparison c = failed;
  double max_abs = 0;
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t len = std::min(kChunk, n - i);
    auto a_raw = a32.narrow(0, i, len);
    auto a = a_raw.to(at::kDouble), e = e32.narrow(0, i, len).to(at::kDouble),
         tr = t.narrow(0, i, len).to(at::kDouble);
    auto unwritten = poison_mask(a_raw);
    auto same = a.eq(e) | (a.isnan() & e.isnan());
    auto band = failed.effective_atol + failed.rtol * e.abs();
    auto close = ((a - e).abs().le(band) & e.isfinite()) | same;
    auto own = (e - tr).abs().clamp_min(own_rms);
    auto err = (a - tr).abs();
    auto excused = e.isfinite() & tr.isfinite() & err.le(band + kOwnErrorFactor * own);
    if (((close | excused) & ~unwritten).logical_not().any().item<bool>()) return failed;
    max_abs = std::max(max_abs, err.masked_fill(~(e.isfinite() & tr.isfinite()), 0).max().item<double>());
  }
  c.ok = true;
  c.sub_kind.clear();
  c.message = "within " + num(kOwnErrorFactor) + "x the float32 reference's own error against float64 " +
              "(max |out - float64| " + num(max_abs) + ", the reference's rms error " + num(own_rms) + ")";
  c.mismatched = 0;
  c.unwritten = 0;
  c.nan_inf = 0;
  c.worst_index.clear();
  return c;
}

}  // namespace kforge::runner
