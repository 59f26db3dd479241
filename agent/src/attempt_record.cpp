#include "kforge/agent/attempt_record.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <set>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/ncu.hpp"
#include "kforge/backends/precision.hpp"
#include "kforge/backends/python_traceback.hpp"
#include "kforge/backends/resource_usage.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

bool is_infrastructure_failure(const backends::Evaluation& ev) {
  return ev.failure.has_value();
}

void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes) {
  rec.outcome = ev.outcome;
  rec.sub_kind = ev.sub_kind;
  rec.error_group = ev.error_group;
  rec.failure = ev.failure;  // set exactly when the attempt is kforge's failure
  if (is_infrastructure_failure(ev)) {
    rec.outcome = Outcome::infra_error;
    if (rec.sub_kind.empty()) rec.sub_kind = std::string(to_string(*ev.failure));
  }
  // One line: a Python failure's exception, never "Traceback (most recent call last):" (the
  // whole text goes to the attempt directory's result.json).
  rec.message = truncate_middle(backends::failure_headline(ev.message), 400);
  rec.compile_ms = ev.compile_ms;
  rec.compile_cached = ev.compile.cached;
  // The bytes the judge was handed, for `library export --as-backend` to copy only those.
  if (std::error_code ec; ev.compile.ok() && fs::is_regular_file(ev.compile.artifact, ec))
    rec.artifact_sha256 = sha256_hex(read_file(ev.compile.artifact));
  rec.check_ms = ev.check_ms;
  rec.bench_ms = ev.bench_ms;
  rec.seed = static_cast<std::uint64_t>(ev.seed);
  rec.correct = rec.outcome == Outcome::pass ||
                (rec.outcome == Outcome::torch_fallback && ev.check && ev.check->correct.value_or(false));
  if (ev.check) {
    rec.trials = ev.check->trials;
    rec.trials_passed = ev.check->trials_passed;
    rec.max_abs_err = ev.check->max_abs_err;
    rec.max_rel_err = ev.check->max_rel_err;
    rec.mismatch_fraction = ev.check->mismatch_fraction;
    rec.tolerance_ratio = ev.check->tolerance_ratio;
  }
  if (ev.bench && ev.bench->ok) {
    const auto& b = *ev.bench;
    rec.t_candidate_ms = b.candidate_ms;
    rec.t_reference_ms = b.reference_ms;
    rec.t_candidate_p10_ms = b.candidate.p10_ms;
    rec.t_candidate_p90_ms = b.candidate.p90_ms;
    rec.cv = b.candidate.cv;
    rec.speedup = b.speedup;
    rec.speedup_ci_low = b.speedup_ci_low;
    rec.speedup_ci_high = b.speedup_ci_high;
    rec.timing_anomaly = b.timing_anomaly;
    rec.timing_unstable = b.timing_unstable;
    rec.timings = b.timings;
    rec.t_reference_before_ms = b.reference_before_ms;
    if (b.candidate_ms > 0) {
      rec.achieved_gbps = bytes / (b.candidate_ms * 1e-3) / 1e9;
      rec.achieved_tflops = flops / (b.candidate_ms * 1e-3) / 1e12;
    }
    rec.profile.t_reference_p10_ms = b.reference.p10_ms;
    rec.profile.t_reference_p90_ms = b.reference.p90_ms;
  }
  record_resources(rec, ev);
}

/// The record's roofline against the measured peaks; `why` prefixes the bottleneck's reason.
static void set_roofline(AttemptRecord& rec, const DevicePeaks& peaks, const Roofline& r,
                         const std::string& why) {
  rec.profile.peaks_device = peaks.device;
  rec.profile.peak_gbps = peaks.dram_bytes_per_s / 1e9;
  rec.profile.peak_tflops = peaks.flops_per_s / 1e12;
  rec.profile.dram_fraction = r.dram_fraction;
  rec.profile.flops_fraction = r.flops_fraction;
  rec.profile.bottleneck = r.bottleneck == Bottleneck::unknown ? "" : std::string(to_string(r.bottleneck));
  rec.profile.bottleneck_reason = why + r.reason;
}

void record_tritonbench_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks,
                                 const std::vector<backends::PerfInputTiming>& inputs) {
  if (!rec.passed()) return;
  const backends::PerfInputTiming* best = nullptr;
  double best_fraction = -1;
  for (const auto& p : inputs) {
    if (!(p.candidate_ms > 0)) continue;
    const double bps = p.bytes / (p.candidate_ms * 1e-3), fps = p.flops / (p.candidate_ms * 1e-3);
    const double f = peaks ? std::max(peaks->dram_bytes_per_s > 0 ? bps / peaks->dram_bytes_per_s : 0,
                                      peaks->flops_per_s > 0 ? fps / peaks->flops_per_s : 0)
                           : bps;
    if (f > best_fraction) {
      best_fraction = f;
      best = &p;
    }
  }
  if (!best) return;
  rec.achieved_gbps = best->bytes / (best->candidate_ms * 1e-3) / 1e9;
  rec.achieved_tflops = best->flops / (best->candidate_ms * 1e-3) / 1e12;
  if (!peaks) return;
  set_roofline(rec, *peaks, roofline(best->candidate_ms, best->bytes, best->flops, *peaks),
               "performance input " + std::to_string(best->input) + ": ");
}

void record_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks, double flops,
                     double bytes) {
  if (!peaks || !rec.passed() || !(rec.t_candidate_ms > 0)) return;
  set_roofline(rec, *peaks, roofline(rec.t_candidate_ms, bytes, flops, *peaks), "");
}

void note_counts_source(AttemptRecord& rec, const backends::LoadResult& load) {
  rec.flops_source = load.flops > 0 ? (load.flops_source.empty() ? "declared" : load.flops_source) : "";
  if (rec.profile.bottleneck.empty()) return;
  std::string est;
  if (rec.flops_source == "estimated") est = "FLOPs estimated by PyTorch's FLOP counter over the reference";
  if (load.bytes <= 0)
    est += (est.empty() ? "" : "; ") + std::string("bytes estimated as inputs + outputs, a lower bound");
  if (!est.empty()) rec.profile.bottleneck_reason += " [estimated: " + est + "]";
}

namespace {

/// Whether the step's ncu profile applies to this attempt at all: an ncu step, an artifact, not
/// a test block's task (their entry points take no fixed inputs to replay).
bool ncu_applies(const ProfileStep& step, const backends::TaskRef& ref, const backends::Evaluation& ev) {
  return step.ncu && !ev.compile.artifact.empty() && !ref.test_block();
}

}  // namespace

void record_profiler(AttemptRecord& rec, ProfileStep& step, backends::RunnerClient& runner,
                     const backends::TaskRef& ref, const backends::Evaluation& ev, const fs::path& dir,
                     std::optional<double> short_of_best, std::unique_ptr<backends::NcuStarted> started) {
  rec.profile.profiler = step.profiler;
  if (!rec.passed() && !(step.failing && rec.outcome == Outcome::output_mismatch)) return;
  rec.profile.profiler_note = step.note;
  if (!ncu_applies(step, ref, ev)) return;
  if (short_of_best && rec.passed()) {
    rec.profile.profiler = "basic";
    rec.profile.profiler_note = "ncu not run: this pass (" + format_double("%.2fx", credited_speedup(rec)) +
                                ") does not improve the episode's best (" +
                                format_double("%.2fx", *short_of_best) +
                                "); --profile-every-pass profiles every pass";
    return;
  }
  if (!started) started = start_profiler(step, runner, ref, ev, dir);
  backends::NcuProfile p = step.ncu->finish(runner, *started);
  rec.profile.profiler_ms = p.profiler_ms;
  rec.judge.phases_ms["judge.profile.device_lock_wait"] = p.lock_wait_ms;  // other runners' timed work
  rec.profile.profiler_note = p.note;
  rec.profile.findings = backends::ncu_findings(p.candidate);
  rec.profile.candidate_kernels = backends::kernel_times(p.candidate);
  rec.profile.reference_kernels = backends::kernel_times(p.reference);
}

std::unique_ptr<backends::NcuStarted> start_profiler(ProfileStep& step, backends::RunnerClient& runner,
                                                     const backends::TaskRef& ref,
                                                     const backends::Evaluation& ev, const fs::path& dir) {
  if (!ncu_applies(step, ref, ev)) return nullptr;
  return step.ncu->start(runner, ref, ev.compile.artifact, dir, ev.host);
}

double task_bytes(const backends::LoadResult& lr) {
  if (lr.bytes > 0) return lr.bytes;
  std::vector<TensorBytes> in, out;
  for (const auto& t : lr.inputs) in.push_back({{t.shape.begin(), t.shape.end()}, t.dtype});
  for (const auto& t : lr.outputs) out.push_back({{t.shape.begin(), t.shape.end()}, t.dtype});
  return io_bytes(in, out);
}

void record_resources(AttemptRecord& rec, const backends::Evaluation& ev) {
  const backends::Backend* b = backends::find_backend(rec.backend);
  if (!b || !b->on_gpu() || b->artifact_kind() != backends::ArtifactKind::shared_object) return;
  if (!ev.compile.ok() || ev.compile.artifact.empty()) return;
  auto ru = backends::resource_usage(ev.compile.artifact, ev.compile.log);
  rec.profile.resources = std::move(ru.kernels);
  rec.profile.resources_note = ru.note;
  rec.profile.resources_ms = ru.ms;
}

void record_precision(AttemptRecord& rec, const backends::Evaluation& ev, const std::string& backend,
                      const backends::LoadResult& load, const std::vector<std::string>& allowed) {
  if (!ev.compile.ok() || ev.compile.artifact.empty()) return;
  const backends::Backend* b = backends::find_backend(backend);
  const backends::PrecisionReport p = ev.precision ? *ev.precision
                                      : b          ? b->inspect_precision(ev.compile.artifact)
                                                   : backends::PrecisionReport{};
  if (!p.error.empty()) spdlog::debug("{}: precision: {}", rec.task, p.error);
  rec.precision = p.joined();
  std::set<std::string> dtypes;
  for (const auto* v : {&load.inputs, &load.outputs})
    for (const auto& t : *v) dtypes.insert(t.dtype);
  auto below = backends::disallowed_precision(p.kinds, dtypes, {allowed.begin(), allowed.end()});
  rec.precision_disallowed = rec.outcome == Outcome::pass && !below.empty();
}

double credited_speedup(const AttemptRecord& rec) {
  if (!rec.passed() || !rec.timing_anomaly.empty() || rec.precision_disallowed) return 0;
  return rec.speedup;
}

}  // namespace kforge::agent
