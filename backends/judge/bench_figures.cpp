// The figures of a bench reply (judge_internal.hpp): the reference timed the same way as the
// candidate, statistics over batches, the speed-up's bootstrap interval, and the two bounds a
// candidate time may not beat (the speed of light, the launch floor).
#include <algorithm>
#include <cstdio>
#include <random>

#include "judge_internal.hpp"

namespace kforge::runner {

std::pair<double, double> bootstrap_speedup_ci(const std::vector<double>& ref,
                                               const std::vector<double>& cand) {
  if (ref.empty() || cand.empty()) return {0, 0};
  std::mt19937_64 rng(12345);
  auto median_of = [&](const std::vector<double>& v) {
    std::vector<double> r(v.size());
    std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
    for (auto& x : r) x = v[pick(rng)];
    std::nth_element(r.begin(), r.begin() + static_cast<long>(r.size() / 2), r.end());
    return r[r.size() / 2];
  };
  std::vector<double> ratios;
  for (int i = 0; i < 2000; ++i) ratios.push_back(median_of(ref) / std::max(1e-9, median_of(cand)));
  std::sort(ratios.begin(), ratios.end());
  return {ratios[50], ratios[1949]};  // 2.5% and 97.5% (percentile bootstrap, Efron 1979)
}

/// Statistics over batches (one sample per batch: the mean time of its K calls).
json stats_json(const Stats& s, int sets) {
  return {{"median_ms", s.median}, {"p10_ms", s.p10}, {"p90_ms", s.p90},       {"mean_ms", s.mean},
          {"min_ms", s.min},       {"cv", s.cv},      {"reps", s.reps * sets}, {"batches", s.reps}};
}

/// Times a function of the reference the same way: batches over K judge-private input sets, in
/// chunks of `chunk` sets, on a GPU each behind a lead-in of the candidate's length.
std::vector<double> time_reference(const JudgeContext& ctx, LoadedTask& task, int K, const BenchPlan& plan,
                                   bool compiled, uint64_t lead_ns, std::size_t chunk) {
  std::vector<std::vector<HeldTensor>> sets;
  std::random_device rd;
  for (int k = 0; k < K; ++k) sets.push_back(task.ref.make_inputs(static_cast<int64_t>(rd() >> 1)));
  auto lead = make_lead_in(ctx);
  const auto lead_ms = lead ? lead_in_alone(ctx, *lead, lead_ns) : std::nullopt;
  if (!lead_ms) lead.reset();
  int preempted = 0;
  std::vector<double> per_rep;
  const auto t0 = Clock::now();
  int calls = 0;
  double timed_ms = 0;
  for (int batch = 0; batch == 0 || plan.more(static_cast<int>(per_rep.size()), calls, timed_ms, t0);
       ++batch) {
    // As the candidate's batches (time_candidate): in chunks, each on the GPU's clock behind a
    // lead-in.
    double wall = 0;
    bool preempted_now = false;
    for (std::size_t i = 0; i < sets.size(); i += chunk) {
      sync_device(ctx.device);
      const bool led = lead && lead->launch(lead_ns).empty();
      const auto b0 = Clock::now();
      for (std::size_t k = i; k < std::min(sets.size(), i + chunk); ++k) task.ref.run(sets[k], compiled);
      const bool stamped = led && lead->stamp().empty();
      sync_device(ctx.device);
      const double gpu = stamped ? lead->interval_ms() : -1;
      wall += gpu >= 0 ? gpu - lead_ms->second : ms_since(b0) - (led ? lead_ms->first : 0.0);
      preempted_now = preempted_now || (led && !ran_alone(*lead));
    }
    if (batch == 0) continue;  // warm-up
    if (preempted_now) {
      lead_ns = shortened(lead_ns);
      if (++preempted > 10) lead.reset();
      continue;
    }
    per_rep.push_back(std::max(0.0, wall) / K);
    calls += K;
    timed_ms += wall;
  }
  return per_rep;
}

namespace {

/// How much faster than the speed of light a time may read before it is called impossible:
/// the measured peak is what fills and copies reach, a little below what the hardware can.
constexpr double kPhysicalMargin = 1.25;

/// The speed of light of one call (ms): every output element must be written (the bench
/// verifies outputs), and of a batch's K sets of outputs at most the cache's worth can still be
/// held there when the batch ends; the rest crossed to memory at no more than the peak
/// bandwidth. 0 when no bound applies (a batch's outputs fit in the cache; no peak known).
double speed_of_light_ms(const JudgeContext& ctx, const LoadedTask& task, int K) {
  if (ctx.peak_bytes_per_s <= 0) return 0;
  double out = 0;  // of the elements verified: all, or those the reference determines
  for (std::size_t j = 0; j < task.out_specs.size(); ++j)
    out += static_cast<double>(bytes_of(task.out_specs[j])) * determined_fraction(task, j);
  const double cache = static_cast<double>(ctx.l2_bytes > 0 ? ctx.l2_bytes : kCpuCacheBytes);
  const double beyond = static_cast<double>(K) * out - cache;
  return beyond > 0 ? beyond / K / ctx.peak_bytes_per_s * 1e3 : 0;
}

}  // namespace

/// Fills the bound's fields of a bench reply; a candidate time below the bound (with the
/// margin) is a timing_anomaly: recorded, never credited (docs/judge.md).
void apply_speed_of_light(const JudgeContext& ctx, const LoadedTask& task, int K, json& j) {
  const double sol = speed_of_light_ms(ctx, task, K);
  j["speed_of_light_ms"] = sol;
  j["peak_bytes_per_s"] = ctx.peak_bytes_per_s;
  const double cand = j.value("candidate_ms", 0.0);
  if (sol <= 0 || cand <= 0 || cand * kPhysicalMargin >= sol) return;
  char why[256];
  std::snprintf(why, sizeof why,
                "%.4g ms per call is faster than writing its outputs allows: at least %.4g ms at the "
                "measured peak of %.4g GB/s (%.4g GB/s implied)",
                cand, sol, ctx.peak_bytes_per_s / 1e9, ctx.peak_bytes_per_s / 1e9 * sol / cand);
  j["timing_anomaly"] = why;
  j["timing_anomaly_kind"] = "speed_of_light";
}

/// A call may read down to this fraction of one launch's floor before it is called impossible:
/// a CUDA graph's nodes or a copy can run a little below a stream's back-to-back kernels.
constexpr double kLaunchFloorFraction = 0.5;

/// A candidate time below half of one kernel launch's GPU time (the judge's own, measured before
/// the candidate was loaded: Session::launch_floor_ms), or of 0 ms, is a timing_anomaly:
/// recorded, never credited. Every call writes its outputs on the device, with at least one
/// kernel or copy; a lower reading means work outside the timed interval (calls deferred and
/// run as one, work run before the clock started) or a window shorter than the calibrated
/// round trip of a run of no sets, whatever its cause (docs/judge.md).
void apply_launch_floor(double floor_ms, json& j) {
  j["launch_floor_ms"] = floor_ms;
  const double cand = j.value("candidate_ms", 0.0);
  if (floor_ms <= 0 || !j.contains("candidate_ms") || cand >= kLaunchFloorFraction * floor_ms ||
      j.contains("timing_anomaly"))
    return;
  char why[256];
  std::snprintf(why, sizeof why,
                "%.3g us per call is below what one kernel launch takes on this device (%.3g us back to "
                "back, measured by the judge before the candidate was loaded)",
                cand * 1e3, floor_ms * 1e3);
  j["timing_anomaly"] = why;
  j["timing_anomaly_kind"] = "launch_floor";
}

}  // namespace kforge::runner
