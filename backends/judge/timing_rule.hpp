// The judge's rule for a bench too noisy to steer by (timing_unstable; docs/judge.md, "Timing
// and peaks"). Plain C++ with no LibTorch, so that the unit tests check the rule itself; the
// bench (judge.cpp bench_candidate) applies it to its own statistics. Pure functions.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

namespace kforge::runner {

/// The reference timed before and after the candidate may differ by this much (the larger
/// median over the smaller, less 1) before the bench is timing_unstable; and a batch CV, of the
/// candidate or of the reference, may reach kUnstableCv. On a quiet machine the batch CV is a few
/// percent and the two reference timings agree within ~5%; 20% is four times that, and below the
/// 25% spread within which repeated speedups of one kernel count as consistent (issue 39).
constexpr double kReferenceDrift = 0.20;
constexpr double kUnstableCv = 0.20;

/// Why a bench is timing_unstable, "" when it is not. Medians in ms; before_ms <= 0: the
/// reference was not timed before the candidate; cand_cv < 0: no candidate was timed.
inline std::string unstable_reason(double before_ms, double after_ms, double ref_cv, double cand_cv) {
  char b[200];
  std::string why;
  auto add = [&] { why += (why.empty() ? "" : "; ") + std::string(b); };
  if (before_ms > 0 && after_ms > 0) {
    const double drift = std::max(before_ms, after_ms) / std::min(before_ms, after_ms) - 1;
    if (drift > kReferenceDrift) {
      std::snprintf(b, sizeof b,
                    "the reference took %.4g ms before the candidate and %.4g ms after (%.0f%% apart)",
                    before_ms, after_ms, 100 * drift);
      add();
    }
  }
  if (cand_cv > kUnstableCv) {
    std::snprintf(b, sizeof b, "the candidate's batch times vary by %.0f%% (CV)", 100 * cand_cv);
    add();
  }
  if (ref_cv > kUnstableCv) {
    std::snprintf(b, sizeof b, "the reference's batch times vary by %.0f%% (CV)", 100 * ref_cv);
    add();
  }
  return why;
}

}  // namespace kforge::runner
