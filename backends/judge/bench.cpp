// The bench of one candidate (judge.hpp bench_candidate): how many input/output sets it
// rotates through, the candidate's timed batches with their secret verification, and the
// bench reply; the reference's timing and the reply's bounds are in bench_figures.cpp.
#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "judge_internal.hpp"
#include "timing_rule.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

namespace kforge::runner {

namespace {

/// Bytes of one input/output set: everything but the model's parameters and buffers.
int64_t set_bytes(const LoadedTask& task) {
  int64_t b = 0;
  for (const auto& s : task.in_specs)
    if (!is_model_state(s)) b += bytes_of(s);
  for (const auto& s : task.out_specs) b += bytes_of(s);
  return b;
}

}  // namespace

/// How many input/output sets the bench rotates through: enough bytes that the last level
/// cache cannot hold them (twice the L2; 64 MiB on the CPU), at most 64, and
/// few enough that the exchange, the judge's copies and the reference fit in free memory. On a
/// GPU at least kMinGpuSets, even when one set alone is larger than the cache: a batch of
/// several calls, each on fresh inputs, queues its launches behind the running kernel, so the
/// per-request cost of reaching the host (its Python, for Triton) and of the final
/// synchronisation is spread over the batch instead of charged to one call (with one set the
/// judge read 0.45 ms for a Triton GELU that do_bench times at 0.18 ms on the H100; with 8,
/// the first call's own Python before its kernel starts still added 3%).
constexpr int kMinGpuSets = 16;

std::size_t chunk_sets(kforge::backends::HostKind host, int K) {
  const int n = host == kforge::backends::HostKind::python ? std::min(K, kMinGpuSets) : K;
  return static_cast<std::size_t>(std::max(1, n));
}

int choose_sets(const JudgeContext& ctx, const LoadedTask& task) {
  const int64_t per_set = std::max<int64_t>(1, set_bytes(task));
  const int64_t target = ctx.l2_bytes > 0 ? 2 * ctx.l2_bytes : kCpuCacheBytes;
  const int64_t least = ctx.device.is_cuda() ? kMinGpuSets : 1;
  int k = static_cast<int>(std::clamp<int64_t>((target + per_set - 1) / per_set, least, 64));
#ifdef KFORGE_RUNNER_CUDA
  if (ctx.device.is_cuda()) {
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    const auto budget = static_cast<int64_t>(0.7 * static_cast<double>(free_b));
    while (k > 1 && (k * per_set * 2 + 3 * per_set) > budget) --k;  // exchange + the judge's sets
  }
#endif
  return k;
}

namespace {

/// nullopt when every output of every set holds the poison the judge just wrote.
std::optional<json> still_poisoned(const Exchange& ex) {
  for (int k = 0; k < ex.sets(); ++k)
    for (std::size_t j = 0; j < ex.n_out(); ++j)
      if (!poison_mask(ex.out(k, j)).all().item<bool>())
        return failure("output_mismatch", "bench_only",
                       "an output changed between the judge's set-up and the timed calls: work done outside "
                       "the timed calls (a kernel left running on the GPU?) is not credited");
  return std::nullopt;
}

/// What the bench learns of the host's side, for diagnostics only (never in a time or a
/// verdict): the host's own account of each timed request (its first call, all calls, the final
/// synchronisation; the candidate's side's word).
struct HostSide {
  std::map<std::string, std::vector<double>> reported_ms;
  int preempted = 0;  ///< batches not used: their lead-in was preempted
  /// The largest timer gap of a lead-in that ran alone (ns): how near honest spins come to
  /// kPreemptedGapNs.
  uint64_t max_alone_gap_ns = 0;
  /// Each timed window's GPU time before the base is taken off (ms), and its freeze (us).
  std::vector<double> window_gpu_ms, freeze_us;

  void report(const json& r) {
    if (!r.is_object()) return;
    for (const auto& [k, v] : r.items())
      if (v.is_number()) reported_ms[k].push_back(v.get<double>());
  }
  /// {"host_reported": {name: median ms}, "lead_in_preempted": n, "lead_in_max_gap_us": us}
  json to_json() const {
    json h = json::object();
    for (const auto& [k, v] : reported_ms) h[k] = stats_of(v).median;
    json judge = json::object();
    if (!window_gpu_ms.empty()) {
      judge["window_gpu_ms_median"] = stats_of(window_gpu_ms).median;
      judge["freeze_us_median"] = stats_of(freeze_us).median;
    }
    return {{"host_reported", h},
            {"judge_side", judge},
            {"lead_in_preempted", preempted},
            {"lead_in_max_gap_us", static_cast<double>(max_alone_gap_ns) / 1e3}};
  }
};

/// Times the candidate: per batch, fresh inputs in every set, one set chosen in secret for
/// verification, K calls in a shuffled order timed by the judge's clock. Fills *per_rep_ms.
std::optional<json> time_candidate(const JudgeContext& ctx, LoadedTask& task, Session& s,
                                   const BenchPlan& plan, const Tolerances& tol, const Deadline& dl,
                                   std::vector<double>* per_rep_ms, int* verified, Laps& laps,
                                   HostSide* side) {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  const int K = s.ex->sets();
  std::vector<int> order(K);
  for (int k = 0; k < K; ++k) order[k] = k;
  const auto t0 = Clock::now();
  int calls = 0, timed = 0;
  double timed_ms = 0;
  for (int batch = 0; batch == 0 || plan.more(timed, calls, timed_ms, t0); ++batch) {
    // The set to verify, drawn before the batch and never told; after the first batches only
    // every other batch on average is verified (skipping work in any batch risks it).
    const bool verify = batch < 3 || std::bernoulli_distribution(0.5)(rng);
    const int v = verify ? std::uniform_int_distribution<int>(0, K - 1)(rng) : -1;
    std::vector<HeldTensor> expected;
    for (int k = 0; k < K; ++k) {
      auto inputs = task.ref.make_inputs(static_cast<int64_t>(rng() >> 33));
      copy_inputs(*s.ex, k, inputs);
      if (k == v) {
        laps.lap("inputs_ms");
        expected = task.ref.run(inputs);
        sync_device(ctx.device);
        laps.lap("verify_reference_ms");
      }
      s.ex->poison(k);
    }
    std::shuffle(order.begin(), order.end(), rng);
    sync_device(ctx.device);
    // Still poisoned, every output of the batch: work that a candidate left running on the GPU
    // (a persistent kernel watching for fresh inputs) cannot do the batch's work untimed.
    if (auto f = still_poisoned(*s.ex)) return f;
    laps.lap("inputs_ms");
    // The clock runs from the frozen host's resumption to the judge's trailer after its reply
    // (timed_window); what calibrate() measured for the same window around a run of no sets
    // (before the candidate was loaded) is taken off. The batch's sets go in chunks
    // (chunk_sets), one timed window each.
    double wall = 0;
    bool alone = true;
    std::optional<json> failed;
    const std::size_t chunk = chunk_sets(s.host_kind, K);
    for (std::size_t i = 0; i < order.size() && !failed; i += chunk) {
      const std::vector<int> part(
          order.begin() + static_cast<std::ptrdiff_t>(i),
          order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + chunk)));
      Window w;
      json reported;
      failed = timed_window(ctx, s, part, dl, true, &w, &reported);
      // Behind a lead-in, the GPU's time from its end to the judge's stamp, less the same for a
      // run of no sets; else the judge's clock less its round trip.
      wall +=
          w.led && w.gpu_ms >= 0 ? w.gpu_ms - s.gpu_base_ms : w.ms - (w.led ? s.lead_in_ms : s.round_trip_ms);
      // Read before the next lead-in overwrites it.
      const uint64_t gap = w.led ? s.lead->max_gap_ns() : 0;
      alone = alone && gap <= kPreemptedGapNs;
      if (gap <= kPreemptedGapNs) side->max_alone_gap_ns = std::max(side->max_alone_gap_ns, gap);
      side->report(reported);
      if (w.led && w.gpu_ms >= 0) {
        side->window_gpu_ms.push_back(w.gpu_ms);
        side->freeze_us.push_back(w.freeze_us);
      }
    }
    laps.lap("timed_ms");
    s.host->freeze();  // already, at its reply (and when the call failed)
    if (!failed) failed = check_threads(ctx, s);
    if (failed) return failed;
    sync_device(ctx.device);
    laps.lap("host_control_ms");
    for (std::size_t j = 0; verify && j < s.ex->n_out(); ++j) {
      Comparison cmp = compare_output(task, j, s.ex->out(v, j), expected.at(j).t, tol);
      if (!cmp.ok)
        return mismatch_reply(
            cmp, "bench_only",
            "correct in the check but wrong on a timed repetition (output '" + task.out_specs[j].name + "')");
    }
    *verified += verify;
    laps.lap("verify_ms");
    // The exchange's parameters are copied once per bench (and are writable on cuda): each batch
    // must leave them, and every canary, as the judge put them.
    if (auto f = check_untouched(*s.ex, task, nullptr, " during the timed calls")) return f;
    laps.lap("untouched_ms");
    if (batch == 0 && plan.warmup > 0) continue;  // the first batch warms up (module loading, clocks)
    if (!alone) {  // the candidate's work may have run inside the lead-in: not used
      s.lead_ns = shortened(s.lead_ns);
      if (++side->preempted > 10 && side->preempted > 2 * timed) s.lead.reset();
      continue;
    }
    per_rep_ms->push_back(std::max(0.0, wall) / K);
    calls += K;
    timed_ms += wall;
    ++timed;
  }
  return std::nullopt;
}

/// PSI's "some" stall time of the CPUs so far (µs; timing_rule.hpp), -1 where not available.
double cpu_stall_us() {
  std::ifstream f("/proc/pressure/cpu");
  std::stringstream text;
  text << f.rdbuf();
  return f ? kforge::runner::psi_some_total_us(text.str()) : -1;
}

}  // namespace

json bench_candidate(const JudgeContext& ctx, LoadedTask& task, const protocol::BenchRequest& req,
                     std::unique_ptr<CandidateSession> session) {
  const auto t0 = Clock::now();
  const double stall0 = cpu_stall_us();  // on a GPU too: the candidate's host queues its launches on a CPU
  BenchPlan plan{req.warmup, req.reps, req.min_reps, req.budget_ms};
  const Deadline dl(req.deadline_ms);
  int K = choose_sets(ctx, task);
  json j{{"ok", true}, {"timing", "judge_clock"}};
  Laps laps;
  std::vector<double> cand;
  double launch_floor = 0;          // the candidate's session's (ms), 0 where none was measured
  std::optional<Stats> ref_before;  // the reference timed before the candidate
  if (req.candidate) {
    const protocol::Candidate& c = *req.candidate;
    // The check's host, unless its calibration ran beside another runner's timed work.
    if (!session || session->artifact != c.artifact || session->host_kind != c.host ||
        !session->host->alive() || !session->calibrated_alone) {
      session.reset();
      session = std::make_unique<Session>();
      auto probe = task.ref.make_inputs(req.seed);
      session->ex = std::make_unique<Exchange>(ctx.device, task.in_specs, host_resident(probe, task.params),
                                               task.out_specs, K);
      probe.clear();
      if (auto r = open_session(ctx, c, *session, dl, laps, before_load(task, c))) return *r;
    }
    Session& s = *session;
    K = s.ex->sets();
    copy_params(*s.ex, task, task.in_specs.size() - task.params.size());
    int verified = 0;
    s.host->freeze();
    laps.lap("params_ms");
    // The reference before the candidate (the host frozen, the device lock held as for every
    // timed step): compared with the one after it, never credited (reference_ms is the one timed
    // after the host is gone).
    if (req.reference_before) {
      const auto kind = c.host;
      ref_before = stats_of(time_reference(ctx, task, K, plan, false, lead_in_ns(kind), chunk_sets(kind, K)));
      laps.lap("reference_before_ms");
    }
    HostSide side;
    auto failed =
        time_candidate(ctx, task, s, plan, tolerances_of(req.tolerances), dl, &cand, &verified, laps, &side);
    j["round_trip_ms"] = s.round_trip_ms;
    j["lead_in_ms"] = s.lead ? s.lead_in_ms : 0.0;
    j["gpu_base_ms"] = s.lead ? s.gpu_base_ms : 0.0;
    launch_floor = s.lead ? s.launch_floor_ms : 0.0;
    j.update(side.to_json());
    if (s.lead && !s.base_gpu_all_ms.empty()) {  // diagnostics: the calibration's spread
      j["judge_side"].update(
          json{{"base_gpu_ms_median", stats_of(s.base_gpu_all_ms).median},
               {"base_gpu_ms_max", *std::max_element(s.base_gpu_all_ms.begin(), s.base_gpu_all_ms.end())},
               {"base_freeze_us_median", stats_of(s.base_freeze_us).median}});
    }
    session.reset();  // the host is killed and reaped: its context is gone before the reference is timed
    laps.lap("host_exit_ms");
    if (failed) return *failed;
    Stats cs = stats_of(cand);
    j["candidate"] = stats_json(cs, K);
    j["candidate"]["samples_ms"] = cand;
    j["candidate_ms"] = cs.median;
    j["verified_batches"] = verified;
  }
  j["sets"] = K;
  // The reference behind the candidate's lead-in (the same host kind's length).
  const auto host = req.candidate ? req.candidate->host : kforge::backends::HostKind::native;
  const uint64_t lead_ns = lead_in_ns(host);
  const std::size_t chunk = chunk_sets(host, K);
  j["sets_per_window"] = chunk;
  j["lead_in_length_ms"] = ctx.device.is_cuda() ? static_cast<double>(lead_ns) / 1e6 : 0.0;
  auto ref = time_reference(ctx, task, K, plan, false, lead_ns, chunk);
  laps.lap("reference_timing_ms");
  Stats rs = stats_of(ref);
  j["reference"] = stats_json(rs, K);
  j["reference"]["samples_ms"] = ref;
  j["reference_ms"] = rs.median;
  if (req.compile_baseline)
    j["reference_compile"] =
        stats_json(stats_of(time_reference(ctx, task, K, plan, true, lead_ns, chunk)), K);
  if (ref_before) {
    j["reference_before"] = stats_json(*ref_before, K);
    j["reference_before_ms"] = ref_before->median;
  }
  if (req.candidate) {
    std::string why =
        unstable_reason(ref_before ? ref_before->median : 0, rs.median, rs.cv, stats_of(cand).cv);
    const double stall1 = stall0 < 0 ? -1 : cpu_stall_us();
    const std::string contended =
        contention_reason(stall1 < 0 ? -1 : stall1 - stall0,
                          std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!contended.empty()) why += (why.empty() ? "" : "; ") + contended;
    if (!why.empty()) j["timing_unstable"] = why;
  }
  apply_speed_of_light(ctx, task, K, j);
  apply_launch_floor(launch_floor, j);
  if (!cand.empty() && j["candidate_ms"].get<double>() > 0) {
    j["speedup"] = rs.median / j["candidate_ms"].get<double>();
    auto [lo, hi] = bootstrap_speedup_ci(ref, cand);
    j["speedup_ci"] = {lo, hi};
  }
  j["flags"] = json::array();
  for (std::size_t o = 0; o < task.out_specs.size(); ++o)
    if (const double f = determined_fraction(task, o); f < 1.0) {
      char b[200];
      std::snprintf(b, sizeof b,
                    "output '%s' verified on %.1f%% of its elements: the reference leaves the rest "
                    "unwritten or nondeterministic",
                    task.out_specs[o].name.c_str(), 100.0 * f);
      j["flags"].push_back(b);
    }
  j["phases"] = laps.to_json();
  j["bench_ms"] = ms_since(t0);
  return j;
}

}  // namespace kforge::runner
