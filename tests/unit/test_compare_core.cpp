// Tests of the judge's one-pass comparison rule (backends/judge/compare_core.hpp): the float
// decodings, the per-element tolerance rule with poison, NaN and infinity, the reference
// statistics, and that merging partials equals one sequential fold (as the GPU's per-block
// partials are merged). The rule's agreement with the detailed compare() is tested through
// kforge-runner (test_verdicts.cpp, test_runner.cpp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../backends/judge/compare_core.hpp"
#include "catch.hpp"

using namespace kforge::runner::fused;

namespace {
double f16(uint16_t h) {
  uint64_t bits = 0;
  return load(&h, 0, FloatKind::f16, &bits);
}
double bf16(uint16_t h) {
  uint64_t bits = 0;
  return load(&h, 0, FloatKind::bf16, &bits);
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
constexpr uint32_t kPoisonF32 = 0x7FCADEAD;  // tensor_check.cpp's float32 poison
Rule rule_f32(double atol = 1e-4, double rtol = 1e-4) {
  return Rule{atol, rtol, atol, kPoisonF32};
}
OutputStats fold_all(const std::vector<float>& a, const std::vector<float>& e, const Rule& r) {
  OutputStats s;
  for (std::size_t i = 0; i < a.size(); ++i) {
    uint64_t ab = 0;
    const double av = load(a.data(), static_cast<int64_t>(i), FloatKind::f32, &ab);
    fold_output(s, av, ab, e[i], FloatKind::f32, r);
  }
  return s;
}
/// |x - y| <= rel |y|
bool near(double x, double y, double rel) {
  return std::fabs(x - y) <= rel * std::fabs(y);
}
float from_bits32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

TEST_CASE("compare_core decodes float16 and bfloat16 exactly", "[compare_core]") {
  CHECK(f16(0x3C00) == 1.0);
  CHECK(f16(0xC000) == -2.0);
  CHECK(f16(0x7BFF) == 65504.0);
  CHECK(f16(0x0001) == std::ldexp(1.0, -24));  // smallest subnormal
  CHECK(f16(0x3555) == 0.333251953125);
  CHECK(std::isinf(f16(0x7C00)));
  CHECK(f16(0xFC00) < 0);
  CHECK(std::isnan(f16(0x7E5A)));  // the float16 poison is a NaN
  CHECK(bf16(0x3F80) == 1.0);
  CHECK(bf16(0xC0A0) == -5.0);
  CHECK(std::isnan(bf16(0x7FDA)));
}

TEST_CASE("compare_core applies |a - e| <= atol + rtol |e| and counts what is not close", "[compare_core]") {
  const Rule r = rule_f32();
  // 1.0 vs 1.00015: band 1e-4 + 1e-4 = 2e-4 -> close; 1.0 vs 1.0003 -> not.
  auto ok = fold_all({1.00015f, 2.0f}, {1.0f, 2.0f}, r);
  CHECK(ok.bad == 0);
  CHECK(near(ok.max_abs, 1.5e-4, 1e-2));
  CHECK(near(ok.max_ratio, 0.75, 1e-2));
  auto bad = fold_all({1.0003f, 2.0f, -7.0f}, {1.0f, 2.0f, 7.0f}, r);
  CHECK(bad.bad == 2);
  CHECK(bad.max_abs == 14.0);
}

TEST_CASE("compare_core: poison is never close, NaN matches NaN only, infinities match themselves",
          "[compare_core]") {
  const Rule r = rule_f32();
  const float poison = from_bits32(kPoisonF32), nan = std::nanf(""), inf = INFINITY;
  CHECK(fold_all({poison}, {1.0f}, r).bad == 1);
  CHECK(fold_all({poison}, {nan}, r).bad == 1);  // the reference's NaN does not excuse an unwritten element
  CHECK(fold_all({nan}, {nan}, r).bad == 0);
  CHECK(fold_all({nan}, {1.0f}, r).bad == 1);
  CHECK(fold_all({inf}, {inf}, r).bad == 0);
  CHECK(fold_all({-inf}, {inf}, r).bad == 1);
  CHECK(fold_all({1.0f}, {inf}, r).bad == 1);
  auto s = fold_all({nan, 1.0f}, {nan, 1.0f}, r);
  CHECK(s.nan);  // the constant-output rule is then not applied (as torch's min/max propagate NaN)
  CHECK(bits_of(poison) == kPoisonF32);
}

TEST_CASE("compare_core: the scaled absolute tolerance applies", "[compare_core]") {
  // effective_atol 1e-6 (the reference's rms is small): 0 vs 5e-6 is not close, as compare() says.
  const Rule scaled{1e-4, 1e-4, 1e-6, kPoisonF32};
  CHECK(fold_all({0.0f}, {5e-6f}, scaled).bad == 1);
  CHECK(fold_all({0.0f}, {5e-6f}, rule_f32()).bad == 0);
}

TEST_CASE("compare_core reference statistics: RMS over finite values, non-finite read as 0 in the range",
          "[compare_core]") {
  ReferenceStats s;
  for (double v : {3.0, -4.0, static_cast<double>(INFINITY), static_cast<double>(NAN)}) fold_reference(s, v);
  CHECK(s.finite == 2);
  CHECK(s.sumsq == 25.0);
  CHECK(s.min == -4.0);
  CHECK(s.max == 3.0);
  ReferenceStats pos;
  for (double v : {2.0, static_cast<double>(NAN)}) fold_reference(pos, v);
  CHECK(pos.min == 0.0);  // the NaN counts as 0, as compare()'s masked_fill does
}

TEST_CASE("compare_core: merged partials equal one sequential fold", "[compare_core]") {
  std::vector<float> a, e;
  for (int i = 0; i < 1000; ++i) {
    e.push_back(std::sin(0.1f * static_cast<float>(i)) * 3);
    a.push_back(e.back() + (i % 97 == 0 ? 0.01f : 1e-6f));
  }
  const Rule r = rule_f32();
  OutputStats whole = fold_all(a, e, r), merged;
  ReferenceStats rwhole, rmerged;
  for (float v : e) fold_reference(rwhole, v);
  for (std::size_t lo = 0; lo < a.size(); lo += 128) {
    const std::size_t hi = std::min(a.size(), lo + 128);
    merge(merged, fold_all({a.begin() + lo, a.begin() + hi}, {e.begin() + lo, e.begin() + hi}, r));
    ReferenceStats part;
    for (std::size_t i = lo; i < hi; ++i) fold_reference(part, e[i]);
    merge(rmerged, part);
  }
  merge(merged, OutputStats{});  // an empty partial (a block past the end) changes nothing
  CHECK(merged.bad == whole.bad);
  CHECK(merged.bad == 11);
  CHECK(merged.max_abs == whole.max_abs);
  CHECK(merged.max_ratio == whole.max_ratio);
  CHECK(merged.min == whole.min);
  CHECK(merged.max == whole.max);
  CHECK(rmerged.finite == rwhole.finite);
  CHECK(near(rmerged.sumsq, rwhole.sumsq, 1e-12));
  CHECK(rmerged.min == rwhole.min);
  CHECK(rmerged.max == rwhole.max);
}
