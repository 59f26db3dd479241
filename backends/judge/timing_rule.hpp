// The judge's rule for a bench too noisy to steer by (timing_unstable; docs/judge.md, "Timing
// and peaks"). Plain C++ with no LibTorch, so that the unit tests check the rule itself; the
// bench (bench.cpp bench_candidate) applies it to its own statistics. Pure functions.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

/// The bench's span may see runnable tasks kept waiting for a CPU this fraction of its wall time
/// (Linux PSI, /proc/pressure/cpu "some": the share of time at least one task waited) before the
/// bench is timing_unstable: a loaded machine (a parallel compile beside the judge) slows a
/// multi-threaded CPU candidate and the reference by different factors, so their ratio is not
/// the kernel's. On a GPU the same holds for another reason: the candidate's host, a separate
/// process, queues its launches on a CPU after the judge's lead-in, so a descheduled host shows
/// up as candidate time while the reference, launched by the judge, does not (an H200 with 32
/// compiles on its 16 cores: KernelBench 19_ReLU's candidate 3.4 to 14.9 ms, its reference a
/// steady 3.03 ms). A quiet machine stays within a few percent.
constexpr double kCpuContention = 0.25;

/// The "total=" microseconds of PSI's "some" line in the text of /proc/pressure/cpu; -1 when
/// absent (a kernel without PSI).
inline double psi_some_total_us(const std::string& text) {
  const auto line = text.find("some ");
  if (line == std::string::npos) return -1;
  const auto total = text.find("total=", line);
  if (total == std::string::npos || total > text.find('\n', line)) return -1;
  return std::strtod(text.c_str() + total + 6, nullptr);
}

/// Why a CPU bench is timing_unstable for contention, "" when it is not: `stalled_us` of PSI
/// "some" time over `wall_us` of the bench (negative: not measured).
inline std::string contention_reason(double stalled_us, double wall_us) {
  if (stalled_us < 0 || wall_us <= 0) return "";
  const double share = stalled_us / wall_us;
  if (share <= kCpuContention) return "";
  char b[200];
  std::snprintf(
      b, sizeof b,
      "the machine's CPUs were contended %.0f%% of the bench (tasks waiting for a CPU: PSI cpu some)",
      100 * std::min(share, 1.0));
  return b;
}

}  // namespace kforge::runner
