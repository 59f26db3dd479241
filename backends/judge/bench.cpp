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

/// A batch's sets before its clock starts: fresh inputs in every set (with the reference's
/// outputs on set `v`'s into *expected; v = -1: none), every output poisoned, and the order
/// shuffled. The failure when an output is no longer poisoned once the device is idle.
std::optional<json> prepare_batch(const JudgeContext& ctx, LoadedTask& task, Session& s, std::mt19937_64& rng,
                                  int v, std::vector<int>& order, std::vector<HeldTensor>* expected,
                                  Laps& laps) {
  for (int k = 0; k < s.ex->sets(); ++k) {
    auto inputs = task.ref.make_inputs(static_cast<int64_t>(rng() >> 33));
    copy_inputs(*s.ex, k, inputs);
    if (k == v) {
      laps.lap("inputs_ms");
      *expected = task.ref.run(inputs);
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
  return std::nullopt;
}

/// A batch's calls over the sets in `order`. The clock runs from the frozen host's resumption
/// to the judge's trailer after its reply (timed_window); what calibrate() measured for the
/// same window around a run of no sets (before the candidate was loaded) is taken off. The
/// batch's sets go in chunks (chunk_sets), one timed window each. Adds the batch's time (ms)
/// to *wall, and clears *alone when a lead-in was preempted; the failure of a call.
std::optional<json> time_batch(const JudgeContext& ctx, Session& s, const std::vector<int>& order,
                               const Deadline& dl, HostSide* side, double* wall, bool* alone) {
  std::optional<json> failed;
  const std::size_t chunk = chunk_sets(s.host_kind, s.ex->sets());
  for (std::size_t i = 0; i < order.size() && !failed; i += chunk) {
    const std::vector<int> part(
        order.begin() + static_cast<std::ptrdiff_t>(i),
        order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + chunk)));
    Window w;
    json reported;
    failed = timed_window(ctx, s, part, dl, true, &w, &reported);
    // Behind a lead-in, the GPU's time from its end to the judge's stamp, less the same for a
    // run of no sets; else the judge's clock less its round trip.
    *wall +=
        w.led && w.gpu_ms >= 0 ? w.gpu_ms - s.gpu_base_ms : w.ms - (w.led ? s.lead_in_ms : s.round_trip_ms);
    // Read before the next lead-in overwrites it.
    const uint64_t gap = w.led ? s.lead->max_gap_ns() : 0;
    *alone = *alone && gap <= kPreemptedGapNs;
    if (gap <= kPreemptedGapNs) side->max_alone_gap_ns = std::max(side->max_alone_gap_ns, gap);
    side->report(reported);
    if (w.led && w.gpu_ms >= 0) {
      side->window_gpu_ms.push_back(w.gpu_ms);
      side->freeze_us.push_back(w.freeze_us);
    }
  }
  return failed;
}

/// The secret verification: set v's outputs against the reference's (`expected`); a mismatch is
/// output_mismatch/bench_only.
std::optional<json> verify_set(const LoadedTask& task, const Exchange& ex, int v,
                               const std::vector<HeldTensor>& expected, const Tolerances& tol) {
  for (std::size_t j = 0; j < ex.n_out(); ++j) {
    Comparison cmp = compare_output(task, j, ex.out(v, j), expected.at(j).t, tol);
    if (!cmp.ok)
      return mismatch_reply(
          cmp, "bench_only",
          "correct in the check but wrong on a timed repetition (output '" + task.out_specs[j].name + "')");
  }
  return std::nullopt;
}

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
    if (auto f = prepare_batch(ctx, task, s, rng, v, order, &expected, laps)) return f;
    double wall = 0;
    bool alone = true;
    std::optional<json> failed = time_batch(ctx, s, order, dl, side, &wall, &alone);
    laps.lap("timed_ms");
    s.host->freeze();  // already, at its reply (and when the call failed)
    if (!failed) failed = check_threads(ctx, s);
    if (failed) return failed;
    sync_device(ctx.device);
    laps.lap("host_control_ms");
    if (verify)
      if (auto f = verify_set(task, *s.ex, v, expected, tol)) return f;
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

/// One bench's state: its request, plan and sets, the reply as it fills, and the candidate's
/// figures the reply derives from.
struct BenchRun {
  BenchRun(const JudgeContext& c, LoadedTask& t, const protocol::BenchRequest& r)
      : ctx(c),
        task(t),
        req(r),
        plan{r.warmup, r.reps, r.min_reps, r.budget_ms},
        dl(r.deadline_ms),
        K(choose_sets(c, t)),
        j{{"ok", true}, {"timing", "judge_clock"}} {}
  const JudgeContext& ctx;
  LoadedTask& task;
  const protocol::BenchRequest& req;
  BenchPlan plan;
  const Deadline dl;
  int K;
  json j;
  Laps laps;
  std::vector<double> cand;         ///< the candidate's samples (ms per call)
  double launch_floor = 0;          ///< the candidate's session's (ms), 0 where none was measured
  std::optional<Stats> ref_before;  ///< the reference timed before the candidate
};

/// The bench's host for the request's candidate into `session`: the check's, unless its
/// calibration ran beside another runner's timed work (or it is another artifact's, or gone);
/// else a fresh one, calibrated and loaded. The reply when the candidate failed to load.
std::optional<json> bench_session(BenchRun& run, std::unique_ptr<Session>& session) {
  const protocol::Candidate& c = *run.req.candidate;
  if (session && session->artifact == c.artifact && session->host_kind == c.host && session->host->alive() &&
      session->calibrated_alone)
    return std::nullopt;
  session.reset();
  session = std::make_unique<Session>();
  auto probe = run.task.ref.make_inputs(run.req.seed);
  session->ex = std::make_unique<Exchange>(run.ctx.device, run.task.in_specs,
                                           host_resident(probe, run.task.params), run.task.out_specs, run.K);
  probe.clear();
  return open_session(run.ctx, c, *session, run.dl, run.laps, before_load(run.task, c));
}

/// The session's calibration into the reply: what every batch subtracted.
void calibration_json(const Session& s, json& j) {
  j["round_trip_ms"] = s.round_trip_ms;
  j["lead_in_ms"] = s.lead ? s.lead_in_ms : 0.0;
  j["gpu_base_ms"] = s.lead ? s.gpu_base_ms : 0.0;
}

/// Behind a lead-in, the calibration's spread into the reply's judge_side (diagnostics).
void calibration_spread_json(const Session& s, json& j) {
  if (!s.lead || s.base_gpu_all_ms.empty()) return;
  j["judge_side"].update(
      json{{"base_gpu_ms_median", stats_of(s.base_gpu_all_ms).median},
           {"base_gpu_ms_max", *std::max_element(s.base_gpu_all_ms.begin(), s.base_gpu_all_ms.end())},
           {"base_freeze_us_median", stats_of(s.base_freeze_us).median}});
}

/// The candidate's side of the bench: its host (bench_session), the reference before it when
/// asked, the candidate's batches (time_candidate); then the host is killed and reaped. The
/// candidate's failure, or nullopt with its figures in the reply.
std::optional<json> bench_candidate_side(BenchRun& run, std::unique_ptr<Session> session) {
  const JudgeContext& ctx = run.ctx;
  if (auto r = bench_session(run, session)) return r;
  Session& s = *session;
  run.K = s.ex->sets();
  copy_params(*s.ex, run.task, run.task.in_specs.size() - run.task.params.size());
  int verified = 0;
  s.host->freeze();
  run.laps.lap("params_ms");
  // The reference before the candidate (the host frozen, the device lock held as for every
  // timed step): compared with the one after it, never credited (reference_ms is the one timed
  // after the host is gone).
  if (run.req.reference_before) {
    const auto kind = run.req.candidate->host;
    run.ref_before = stats_of(
        time_reference(ctx, run.task, run.K, run.plan, false, lead_in_ns(kind), chunk_sets(kind, run.K)));
    run.laps.lap("reference_before_ms");
  }
  HostSide side;
  auto failed = time_candidate(ctx, run.task, s, run.plan, tolerances_of(run.req.tolerances), run.dl,
                               &run.cand, &verified, run.laps, &side);
  calibration_json(s, run.j);
  run.launch_floor = s.lead ? s.launch_floor_ms : 0.0;
  run.j.update(side.to_json());
  calibration_spread_json(s, run.j);
  session.reset();  // the host is killed and reaped: its context is gone before the reference is timed
  run.laps.lap("host_exit_ms");
  if (failed) return failed;
  Stats cs = stats_of(run.cand);
  run.j["candidate"] = stats_json(cs, run.K);
  run.j["candidate"]["samples_ms"] = run.cand;
  run.j["candidate_ms"] = cs.median;
  run.j["verified_batches"] = verified;
  return std::nullopt;
}

/// The reference's side, with the candidate's process gone: timed behind the candidate's
/// lead-in (the same host kind's length), in the same chunks; and, when asked, its compiled
/// form. Its samples (ms per call).
std::vector<double> bench_reference_side(BenchRun& run) {
  json& j = run.j;
  const auto host = run.req.candidate ? run.req.candidate->host : kforge::backends::HostKind::native;
  const uint64_t lead_ns = lead_in_ns(host);
  const std::size_t chunk = chunk_sets(host, run.K);
  j["sets_per_window"] = chunk;
  j["lead_in_length_ms"] = run.ctx.device.is_cuda() ? static_cast<double>(lead_ns) / 1e6 : 0.0;
  auto ref = time_reference(run.ctx, run.task, run.K, run.plan, false, lead_ns, chunk);
  run.laps.lap("reference_timing_ms");
  Stats rs = stats_of(ref);
  j["reference"] = stats_json(rs, run.K);
  j["reference"]["samples_ms"] = ref;
  j["reference_ms"] = rs.median;
  if (run.req.compile_baseline)
    j["reference_compile"] =
        stats_json(stats_of(time_reference(run.ctx, run.task, run.K, run.plan, true, lead_ns, chunk)), run.K);
  if (run.ref_before) {
    j["reference_before"] = stats_json(*run.ref_before, run.K);
    j["reference_before_ms"] = run.ref_before->median;
  }
  return ref;
}

/// Why the bench's figures are not to be trusted (timing_rule.hpp): the reference moved, the
/// batches spread, or the CPUs stalled (since `stall0`, over the bench from t0); nothing when
/// none of them.
void mark_unstable(BenchRun& run, const Stats& rs, double stall0, Clock::time_point t0) {
  std::string why =
      unstable_reason(run.ref_before ? run.ref_before->median : 0, rs.median, rs.cv, stats_of(run.cand).cv);
  const double stall1 = stall0 < 0 ? -1 : cpu_stall_us();
  const std::string contended =
      contention_reason(stall1 < 0 ? -1 : stall1 - stall0,
                        std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  if (!contended.empty()) why += (why.empty() ? "" : "; ") + contended;
  if (!why.empty()) run.j["timing_unstable"] = why;
}

/// The reply's flags: each output the reference determines only in part.
json determined_flags(const LoadedTask& task) {
  json flags = json::array();
  for (std::size_t o = 0; o < task.out_specs.size(); ++o)
    if (const double f = determined_fraction(task, o); f < 1.0) {
      char b[200];
      std::snprintf(b, sizeof b,
                    "output '%s' verified on %.1f%% of its elements: the reference leaves the rest "
                    "unwritten or nondeterministic",
                    task.out_specs[o].name.c_str(), 100.0 * f);
      flags.push_back(b);
    }
  return flags;
}

}  // namespace

json bench_candidate(const JudgeContext& ctx, LoadedTask& task, const protocol::BenchRequest& req,
                     std::unique_ptr<CandidateSession> session) {
  const auto t0 = Clock::now();
  const double stall0 = cpu_stall_us();  // on a GPU too: the candidate's host queues its launches on a CPU
  BenchRun run(ctx, task, req);
  if (req.candidate)
    if (auto failed = bench_candidate_side(run, std::move(session))) return *failed;
  json& j = run.j;
  j["sets"] = run.K;
  const std::vector<double> ref = bench_reference_side(run);
  const Stats rs = stats_of(ref);
  if (req.candidate) mark_unstable(run, rs, stall0, t0);
  apply_speed_of_light(ctx, task, run.K, j);
  apply_launch_floor(run.launch_floor, j);
  if (!run.cand.empty() && j["candidate_ms"].get<double>() > 0) {
    j["speedup"] = rs.median / j["candidate_ms"].get<double>();
    auto [lo, hi] = bootstrap_speedup_ci(ref, run.cand);
    j["speedup_ci"] = {lo, hi};
  }
  j["flags"] = determined_flags(task);
  j["phases"] = run.laps.to_json();
  j["bench_ms"] = ms_since(t0);
  return j;
}

}  // namespace kforge::runner
