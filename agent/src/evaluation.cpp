#include "kforge/agent/evaluation.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/kernelbench_import.hpp"
#include "kforge/agent/ports.hpp"
#include "kforge/agent/run_checks.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/agent/scheduler.hpp"
#include "kforge/backends/precision.hpp"
#include "kforge/backends/python_errors.hpp"
#include "kforge/backends/resource_usage.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/run_status.hpp"
#include "kforge/sandbox/compile_cache.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

namespace {
std::string fmt(const char* f, double v);
}

backends::TaskRef task_ref(const Task& task, const std::string& profile) {
  backends::TaskRef r;
  r.id = task.id;
  r.file = task.file;
  auto src = apply_profile(task, profile);
  if (!src) throw std::invalid_argument("task " + task.id + " has no profile '" + profile + "'");
  r.source = *src;
  if (auto est = estimate_inputs(r.source); est.ok) r.input_bytes_estimate = est.bytes;
  for (const auto& [dtype, tol] : task.tolerances) r.tolerances[dtype] = {tol.atol, tol.rtol};
  r.flops_expr = task.flops;
  r.bytes_expr = task.bytes;
  r.module_mode = task.module_mode;
  r.allow_ops = task.allow_ops;
  if (task.format == TaskFormat::tritonbench_t || task.format == TaskFormat::tritonbench_g) {
    // TritonBench: the implementation and its test block
    r.source = task.source.substr(0, task.source.find(tritonbench_separator()));
    r.test_source = task.test_source;
    r.test_function = task.test_function;
    r.entries = task.entries;
    r.perf_script = task.perf_script;
  }
  return r;
}

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

std::optional<DevicePeaks> device_peaks(backends::RunnerClient& runner, const std::string& device_name) {
  // A cached entry measured by an older method (before kforge-peaks/2: one thread's at::mm on
  // the CPU, below what kernels reach) is measured again (backends/judge/runner.hpp).
  if (auto p = load_peaks(default_peaks_file(), device_name); p && starts_with(p->method, "kforge-peaks/2"))
    return p;
  auto m = runner.measure_peaks();
  if (!m) return std::nullopt;
  DevicePeaks p{device_name, m->dram_bytes_per_s, m->flops_per_s, iso8601_utc_now(), m->method};
  try {
    save_peaks(default_peaks_file(), p);
  } catch (const std::exception& e) {
    spdlog::warn("peaks measured but not cached: {}", e.what());
  }
  return p;
}

std::optional<backends::ScaledTask> scale_for_profile(const backends::TaskRef& task, double target_bytes) {
  auto sp = scale_to_bytes(task.source, target_bytes, "ncu");
  if (!sp || sp->factor <= 1) return std::nullopt;
  backends::ScaledTask s{task, ""};
  s.task.source = sp->source;
  s.task.input_bytes_estimate = sp->after.bytes;
  for (const auto& c : sp->changes) s.description += (s.description.empty() ? "" : ", ") + c;
  s.description += fmt(": %.0f MiB of inputs", sp->after.bytes / (1024.0 * 1024));
  return s;
}

std::unique_ptr<ProfileStep> make_profile_step(const std::string& requested, const std::string& backend,
                                               bool bench) {
  auto step = std::make_unique<ProfileStep>();
  if (!bench && requested == "auto") {
    step->profiler = "none";
    return step;
  }
  const backends::Backend* b = backends::find_backend(backend);
  const bool gpu = b && b->on_gpu();
  const auto ncu = gpu ? backends::find_ncu() : std::nullopt;
  auto resolved = backends::resolve_profiler(requested, ncu.has_value());
  if (!resolved) throw std::invalid_argument("--profiler: unknown profiler '" + requested + "'");
  step->profiler = *resolved;
  if (!gpu && step->profiler == "ncu") step->profiler = "basic";  // ncu profiles GPU kernels
  if (gpu && !ncu && step->profiler != "none") {
    step->profiler = "basic";
    step->note = "ncu not found (KFORGE_NCU, PATH, CUDA_HOME, /usr/local/cuda/bin): basic profile only";
  }
  if (step->profiler == "ncu") {
    // The reference's reports across runs beside the compile cache; the step's wall-clock
    // budget (KFORGE_NCU_BUDGET_S, default 120 s per attempt).
    backends::NcuProfilerOptions po;
    po.reference_cache = backends::NcuReferenceCache::default_dir();
    if (const char* s = std::getenv("KFORGE_NCU_BUDGET_S"); s && std::atof(s) > 0)
      po.budget = std::chrono::milliseconds(static_cast<int64_t>(std::atof(s) * 1000));
    po.scale = scale_for_profile;
    step->ncu = std::make_unique<backends::NcuProfiler>(*ncu, backends::load_ncu_metrics(), po);
  }
  return step;
}

void record_profiler(AttemptRecord& rec, ProfileStep& step, backends::RunnerClient& runner,
                     const backends::TaskRef& ref, const backends::Evaluation& ev, const fs::path& dir,
                     std::optional<double> short_of_best) {
  rec.profile.profiler = step.profiler;
  if (!rec.passed() && !(step.failing && rec.outcome == Outcome::output_mismatch)) return;
  rec.profile.profiler_note = step.note;
  if (!step.ncu || ev.compile.artifact.empty() || ref.test_block()) return;
  if (short_of_best && rec.passed()) {
    rec.profile.profiler = "basic";
    rec.profile.profiler_note = "ncu not run: this pass (" + fmt("%.2fx", credited_speedup(rec)) +
                                ") does not improve the episode's best (" + fmt("%.2fx", *short_of_best) +
                                "); --profile-every-pass profiles every pass";
    return;
  }
  backends::NcuProfile p = step.ncu->profile(runner, ref, ev.compile.artifact, dir, ev.host);
  rec.profile.profiler_ms = p.profiler_ms;
  rec.judge.phases_ms["judge.profile.device_lock_wait"] = p.lock_wait_ms;  // other runners' timed work
  rec.profile.profiler_note = p.note;
  rec.profile.findings = backends::ncu_findings(p.candidate);
  rec.profile.candidate_kernels = backends::kernel_times(p.candidate);
  rec.profile.reference_kernels = backends::kernel_times(p.reference);
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

PrecisionContract precision_contract(const std::string& backend, const std::string& device_type,
                                     const std::vector<std::string>& run_allowed, const Task& task) {
  PrecisionContract c;
  const backends::Backend* b = backends::find_backend(backend);
  c.inspected = b && b->inspects_precision();
  c.gpu = device_type != "cpu";
  auto usable = [&](const std::vector<std::string>& kinds) {
    std::vector<std::string> out;
    for (const auto& k : kinds)
      if ((c.gpu || k != "tf32") && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
  };
  c.run_allowed = usable(run_allowed);
  for (const auto& k : usable(task.allow_precision))
    if (std::find(c.run_allowed.begin(), c.run_allowed.end(), k) == c.run_allowed.end())
      c.task_allowed.push_back(k);
  return c;
}

namespace {

/// The precision line of a prompt's checks: the same run-level sentence on every task of a run,
/// the task's own allowance with its reason, detection claimed only where the backend inspects.
std::string precision_check(const PrecisionContract& p) {
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) s += (s.empty() ? "" : ", ") + a;
    return s.empty() ? std::string("none") : s;
  };
  std::string line =
      "precision: compute at no less than the precision of the tensors' dtype (float32 tensors: "
      "float32 math";
  line += p.gpu ? ", no TF32/FP16/BF16 tensor-core instructions)" : ")";
  line += p.inspected
              ? "; lower-precision math is detected in the compiled binary and is not credited with a "
                "speedup"
              : "; this backend's binaries are not inspected for it: the tolerances above are the check";
  line += "; lower precision allowed in this run: " + joined(p.run_allowed);
  if (!p.task_allowed.empty())
    line += "; allowed for this task too: " + joined(p.task_allowed) +
            (p.task_allowed == std::vector<std::string>{"tf32"}
                 ? " (PyTorch runs the reference's convolutions in TF32 on the GPU)"
                 : " (the task's own allowance)");
  return line;
}

}  // namespace

std::vector<std::string> judged_checks(const Task& task, const std::vector<backends::TensorSpec>& outputs,
                                       int trials, const PrecisionContract& precision) {
  std::vector<std::string> v;
  v.push_back(std::to_string(trials) +
              " trials, each on fresh random inputs from get_inputs() (a new seed per trial); outputs are "
              "pre-filled with a poison value, so every element must be written");
  v.push_back(
      "then one trial with the model's floating parameters perturbed (every weight and bias must be read "
      "and used, even where its initial value is 1 or 0) and one on scaled-normal inputs of both signs "
      "(where the reference stays finite): exact semantics, not an approximation that holds on [0, 1); "
      "there, float32 rounding differences beyond the tolerance are judged against a float64 run of the "
      "reference");
  std::set<std::string> dtypes;
  for (const auto& o : outputs) dtypes.insert(o.dtype);
  for (const auto& dt : dtypes) {
    Tolerance t = task.tolerance_for(dt);
    char b[1024];
    if (t.atol == 0 && t.rtol == 0)
      std::snprintf(b, sizeof b, "%s outputs must equal the reference exactly", dt.c_str());
    else
      std::snprintf(b, sizeof b,
                    "%s outputs: |out - ref| <= atol + rtol * |ref| elementwise with atol = %g, rtol = %g; "
                    "where the reference's values are small next to atol, atol shrinks with their "
                    "root-mean-square, and a constant output is rejected when the reference is not constant",
                    dt.c_str(), t.atol, t.rtol);
    v.push_back(b);
  }
  v.push_back(precision_check(precision));
  return v;
}

void write_unusable(const fs::path& run_dir, const std::map<std::string, std::string>& unusable) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [task, why] : unusable) j[task] = why;
  write_file(run_dir / "unusable.json", dump_json(j, 2) + "\n");
}

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// One info line per profiled pass: the bottleneck, the top finding, the kernels and the note.
void log_profile(const AttemptRecord& rec) {
  const auto& p = rec.profile;
  if (!rec.passed() || (p.bottleneck.empty() && p.findings.empty() && p.profiler_note.empty())) return;
  std::string s = p.bottleneck.empty() ? "" : p.bottleneck + " (" + p.bottleneck_reason + ")";
  if (!p.findings.empty())
    s += "; top finding: " + p.findings[0].label + " - " + p.findings[0].interpretation;
  if (!p.candidate_kernels.empty())
    s += "; " + std::to_string(p.candidate_kernels.size()) + " kernel(s), profiled in " +
         fmt("%.0f", p.profiler_ms) + " ms";
  if (!p.profiler_note.empty()) s += "; " + p.profiler_note;
  spdlog::info("{}: {}", rec.task, s);
}

}  // namespace

int finished_run_exit_status(const fs::path& run_dir, std::ostream& err) {
  const RunStatus st = run_status(load_attempts(run_dir).records);
  if (st.paused_episodes > 0) {
    err << "kforge run: " << st.paused_episodes << " episode(s) paused at an llm_error; --resume "
        << run_dir.string() << " asks those turns again. Last LLM error (" << st.last_llm_error_task
        << "): " << truncate_middle(st.last_llm_error, 600) << "\n";
    return kExitLlmError;
  }
  if (st.scored == 0) {
    err << "kforge run: nothing was scored (" << st.records
        << " record(s), none judged: see infra_error in attempts.jsonl and unusable.json)\n";
    return kExitInfraError;
  }
  return 0;
}

KernelSamples find_kernel_samples(const fs::path& task_dir, const std::string& source_file) {
  KernelSamples ks;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(task_dir, ec)) {
    if (!e.is_directory(ec) || !fs::is_regular_file(e.path() / source_file, ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.empty() || name.size() > 6 ||
        !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      ks.errors.push_back((e.path() / source_file).string() +
                          ": not a sample (a sample's folder is named by its index: 0, 1, 2, ...)");
      continue;
    }
    ks.samples.emplace_back(std::stoi(name), e.path() / source_file);
  }
  if (fs::is_regular_file(task_dir / source_file, ec)) ks.samples.emplace_back(0, task_dir / source_file);
  std::sort(ks.samples.begin(), ks.samples.end());
  // Two files for one index ("0/" beside a top-level kernel, or "1/" and "01/"): neither is judged.
  for (std::size_t i = 0; i + 1 < ks.samples.size();) {
    if (ks.samples[i].first != ks.samples[i + 1].first) {
      ++i;
      continue;
    }
    const int dup = ks.samples[i].first;
    std::string files;
    for (const auto& [s, f] : ks.samples)
      if (s == dup) files += (files.empty() ? "" : " and ") + f.string();
    ks.errors.push_back(files + ": two kernels for sample " + std::to_string(dup) + "; neither is judged");
    std::erase_if(ks.samples, [dup](const auto& p) { return p.first == dup; });
  }
  return ks;
}

namespace {

/// One kernel file to judge: a task's sample.
struct EvalItem {
  const Task* task = nullptr;
  int sample = 0;
  fs::path file;
};

/// What `kforge eval` sets up before judging: one owner, run_eval's frame.
struct EvalSetup {
  const backends::Backend* backend = nullptr;
  Suite suite;
  std::vector<EvalItem> todo;
  std::vector<std::unique_ptr<backends::RunnerClient>> runners;  ///< one per judge slot (--devices)
  std::string hello;                                             ///< the first runner's
  std::optional<RunDir> run;
  std::unique_ptr<ProfileStep> profile;
  AttemptSetup attempt;
  std::deque<TaskJudging> judging;  ///< stable addresses: the episodes point here
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  ///< this invocation's
};

/// The backend, the suite and the kernels to judge. 0 or 2.
int select_kernels(const EvalCommand& cmd, EvalSetup& es) {
  es.backend = backends::find_backend(cmd.backend);
  if (!es.backend) {
    std::cerr << "kforge eval: --backend " << cmd.backend << ": unknown backend (known: ";
    for (const auto& n : backends::backend_names()) std::cerr << n << " ";
    std::cerr << ")\n";
    return 2;
  }
  try {
    es.suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: " << e.what() << "\n";
    return 2;
  }
  for (const auto& e : es.suite.skipped) spdlog::warn("skipped: {}", e.to_string());
  if (!fs::is_directory(cmd.kernels)) {
    std::cerr << "kforge eval: --kernels " << cmd.kernels.string() << ": not a directory\n";
    return 2;
  }
  std::vector<const Task*> all;
  for (const auto& t : es.suite.tasks) all.push_back(&t);
  if (auto why = profile_problem(all, cmd.profile, es.suite.name)) {
    std::cerr << "kforge eval: " << *why << "\n";
    return 2;
  }
  const std::string src_name = es.backend->source_file_name();
  // A kernel folder that names no task is an error, not a task lost from the denominators.
  if (const auto bad = unmatched_kernel_folders(cmd.kernels, es.suite, src_name); !bad.empty()) {
    for (const auto& b : bad)
      std::cerr << "kforge eval: --kernels " << cmd.kernels.string() << ": folder " << b
                << " names no task of suite " << es.suite.name << "\n";
    return 2;
  }
  for (const auto& t : es.suite.tasks) {
    if (!cmd.only.empty() && t.id.find(cmd.only) == std::string::npos) continue;
    const KernelSamples ks = find_kernel_samples(cmd.kernels / t.id, src_name);
    for (const auto& e : ks.errors) std::cerr << "kforge eval: " << e << "\n";
    for (const auto& [sample, file] : ks.samples) es.todo.push_back({&t, sample, file});
  }
  if (es.todo.empty()) {
    std::cerr << "kforge eval: no " << src_name << " under " << cmd.kernels.string()
              << "/<task-id>/ or <task-id>/<sample>/ matches a task of suite " << es.suite.name << "\n";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cmd.kernels, ec))
      if (parse_generation_name(e.path().filename().string())) {
        std::cerr << "kforge eval: " << cmd.kernels.string()
                  << " holds KernelBench generations (level_<L>_problem_<P>_sample_<S>_kernel.py): turn them "
                     "into kernels with `kforge import-kernelbench --suite "
                  << cmd.suite << " --generations " << cmd.kernels.string() << " --out KERNELS` first\n";
        break;
      }
    return 2;
  }
  return 0;
}

/// The manifest's "config" of an eval: run's keys where run has the option (run_options.hpp).
nlohmann::json eval_config(const EvalCommand& cmd, const Suite& suite, const std::string& device,
                           const std::vector<std::string>& slots) {
  return {{"suite", suite.name},
          {"suite_root", suite.root.string()},
          {"backend", cmd.backend},
          {"kernels", fs::absolute(cmd.kernels).string()},
          {"profile", cmd.profile.empty() ? "default" : cmd.profile},
          {"trials", cmd.trials},
          {"bench", cmd.bench},
          {"reps", cmd.reps},
          {"perf_inputs", cmd.perf_inputs},
          {"baseline", cmd.baseline},
          {"allow_precision", cmd.allow_precision},
          {"allow_ops", cmd.allow_ops},
          {"device", device},
          {"devices", slots}};
}

/// An existing --out: only an eval's, judged with the same result-changing options (before any
/// runner starts). 0 or 2.
int check_eval_out(const EvalCommand& cmd, const EvalSetup& es) {
  std::error_code ec;
  if (!fs::exists(cmd.out / "manifest.json", ec)) return 0;
  std::optional<std::string> why;
  try {
    why = eval_resume_problem(nlohmann::json::parse(read_file(cmd.out / "manifest.json")),
                              eval_config(cmd, es.suite, "", {}));
  } catch (const std::exception& e) {
    why = std::string("manifest.json: ") + e.what();
  }
  if (!why) return 0;
  std::cerr << "kforge eval: --out " << cmd.out.string() << ": " << *why << "\n";
  return 2;
}

/// The runner and the run directory. 0, 2 or 3.
int open_eval(const EvalCommand& cmd, EvalSetup& es) {
  // The builds' own start-up (the triton backend's warm scanners) while the runners start.
  es.backend->prewarm(std::clamp(static_cast<int>(es.todo.size()), 1, std::max(1, cmd.jobs)),
                      backends::CompileOptions{});
  StartedRunners started = start_runners(cmd.devices, cmd.device, *es.backend, "kforge eval");
  if (started.rc) return started.rc;
  es.runners = std::move(started.runners);
  es.hello = started.first_hello;
  const std::string device = es.runners[0]->config().device;
  std::vector<std::string> slots;
  for (const auto& r : es.runners) slots.push_back(r->config().device);
  nlohmann::json manifest{{"command", "eval"},
                          {"config", eval_config(cmd, es.suite, device, slots)},
                          {"runner", nlohmann::json::parse(es.hello)},
                          {"devices", started.devices}};
  try {
    if (fs::exists(cmd.out / "manifest.json"))
      es.run.emplace(RunDir::open_for_resume(cmd.out));
    else
      es.run.emplace(RunDir::create(cmd.out, manifest));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: --out " << cmd.out.string() << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// The profile step, before the run directory exists (a profiler that cannot be used leaves
/// nothing behind). 0 or 2.
int make_eval_profile(const EvalCommand& cmd, EvalSetup& es) {
  try {
    es.profile = make_profile_step(cmd.profiler, cmd.backend, cmd.bench);
    es.profile->failing = cmd.profile_failing;
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// The judging setup: options, the profile step's use and the device's peaks.
int make_eval_setup(const EvalCommand& cmd, EvalSetup& es) {
  AttemptSetup& a = es.attempt;
  a.backend = es.backend;
  a.backend_name = cmd.backend;
  a.profile = es.profile.get();
  a.allow_precision = cmd.allow_precision;
  a.reference_times = std::make_shared<ReferenceTimes>();
  const std::string device = es.runners[0]->config().device;
  if (es.profile->profiler != "none")
    a.peaks = device_peaks(*es.runners[0],
                           device_facts(nlohmann::json::parse(es.hello, nullptr, false), device).name);
  a.opt.trials = cmd.trials;
  a.opt.bench = cmd.bench;
  a.opt.bench_options.reps = cmd.reps;
  a.opt.bench_options.perf_inputs = cmd.perf_inputs;
  a.opt.bench_options.compile_baseline = cmd.baseline == "compile";
  a.opt.compile.arch = cmd.arch;
  a.opt.compile.cache_dir = sandbox::CompileCache::default_dir();
  return 0;
}

/// "pass@k over 2 task(s), 6 sample(s): pass@1 0.500, pass@2 0.917, ..." from every record
/// of the run directory (this invocation's and those skipped as unchanged): the unbiased
/// estimator (benchmarks/metrics.hpp, Chen et al. 2021) for every k up to the samples.
std::string pass_at_k_line(const fs::path& out) {
  const Summary s = summarize(load_attempts(out).records);
  const Scores& b = s.overall.best;
  if (b.pass_at_k.empty()) return "";
  std::string line =
      "pass@k over " + std::to_string(b.tasks) + " task(s), " + std::to_string(b.episodes) + " sample(s):";
  for (const auto& [k, v] : b.pass_at_k)
    line += (k > 1 ? ", pass@" : " pass@") + std::to_string(k) + " " + fmt("%.3f", v);
  return line;
}

void print_row(const AttemptRecord& rec) {
  std::printf("%-44s %6d %-16s %-22s %10s %10s %8s\n", rec.task.c_str(), rec.sample,
              std::string(to_string(rec.outcome)).c_str(), rec.sub_kind.c_str(),
              rec.t_candidate_ms > 0 ? fmt("%.4f", rec.t_candidate_ms).c_str() : "-",
              rec.t_reference_ms > 0 ? fmt("%.4f", rec.t_reference_ms).c_str() : "-",
              rec.speedup > 0 ? fmt("%.2fx", rec.speedup).c_str() : "-");
  std::fflush(stdout);
}

/// Eval's store: the one attempt writer, then the table's row and the log lines, on the
/// scheduler's thread as each attempt finishes. Collects the tasks found unusable.
class EvalStore final : public StorePort {
 public:
  explicit EvalStore(RunDir& run) : run_(run), inner_(make_store_port(run)) {}
  void record(const AttemptRecord& rec, const AttemptFiles& files) override {
    inner_->record(rec, files);
    const std::string message = files.result.value("message", rec.message);
    if (rec.outcome != Outcome::pass) spdlog::info("{}: {}", rec.task, truncate_middle(message, 600));
    log_profile(rec);
    if (rec.failure == FailureKind::reference) unusable[rec.task] = rec.message;
    print_row(rec);
  }
  fs::path attempt_dir(const AttemptRecord& rec) const override { return inner_->attempt_dir(rec); }
  std::map<std::string, std::string> unusable;  ///< task -> why its reference cannot be used

 private:
  RunDir& run_;
  std::unique_ptr<StorePort> inner_;
};

/// Eval asks no LLM and shows no prompt: a given candidate's episode never renders.
class NoRender final : public RenderPort {
 public:
  prompts::Prompt render(const EpisodeState&) override {
    throw std::logic_error("kforge eval renders no prompt");
  }
  void learned(const EpisodeState&) override {}
};

/// The tasks to judge now: each with its kernel's source. Unchanged kernels already judged in
/// the run directory are skipped (listed in `unchanged`).
std::vector<EpisodeSpec> eval_episodes(const EvalCommand& cmd, EvalSetup& es,
                                       std::vector<std::string>& unchanged) {
  // Only model outcomes of the same source are final: an infra_error attempt, and a kernel whose
  // file changed since it was judged, are judged again (the later record supersedes the earlier).
  std::map<AttemptKey, std::string> judged;  // key -> source_sha of its last model-outcome record
  for (const auto& r : es.run->load_attempts())
    if (is_model_outcome(r.outcome)) judged[key_of(r)] = r.source_sha;
  std::vector<EpisodeSpec> out;
  std::map<const Task*, TaskJudging*> judging;  // one per task, shared by its samples
  for (const EvalItem& item : es.todo) {
    const Task* t = item.task;
    const std::string name = t->id + (item.sample ? "#" + std::to_string(item.sample) : "");
    std::string source = read_file(item.file);
    if (auto it = judged.find({t->id, item.sample, 1}); it != judged.end()) {
      if (it->second == sha256_hex(source)) {
        unchanged.push_back(name);
        continue;
      }
      spdlog::info("{}: the kernel changed since it was judged in {}: judging it again", name,
                   cmd.out.string());
    }
    if (!judging.count(t)) {
      TaskJudging tj{t, {}, {}, {}};
      try {
        tj.ref = task_ref_for(*t, cmd.profile, cmd.allow_ops);
      } catch (const std::exception& e) {
        spdlog::warn("{}: {}", t->id, e.what());
        judging[t] = nullptr;
        continue;
      }
      tj.module_suffix = module_suffix_for(es.attempt, *t);  // an operator task's adapter
      judging[t] = &es.judging.emplace_back(std::move(tj));
    }
    if (TaskJudging* tj = judging[t]) out.push_back({tj, item.sample, 1, 0.0, {}, std::move(source)});
  }
  return out;
}

/// Judges the episodes on the one scheduler `kforge run` uses: cmd.jobs compiles at once, one
/// judge slot per runner (--devices). Returns the tally; `store` has printed the rows.
RunTally judge_episodes(const EvalCommand& cmd, EvalSetup& es, std::vector<EpisodeSpec> episodes,
                        EvalStore& store) {
  std::vector<backends::RunnerClient*> runners;
  for (auto& r : es.runners) runners.push_back(r.get());
  auto build = make_build_port(es.attempt, std::max(1, cmd.jobs));
  auto judge = make_judge_port(es.attempt, runners);
  NoRender render;
  auto clock = make_clock_port();
  MachineConfig mc;
  mc.turns = 1;
  mc.backend = cmd.backend;
  mc.source_file = es.backend->source_file_name();
  mc.profile_every_pass = true;  // one attempt per task: every pass is its episode's best
  SchedulerConfig sc;
  sc.llm_concurrency = 1;
  sc.compile_jobs = std::max(1, cmd.jobs);
  sc.max_llm_failures = 0;
  sc.max_infra_failures = 0;  // eval judges every kernel; infra_errors are counted at the end
  sc.handle_signals = true;
  boost::asio::io_context io;
  Scheduler sched(io, {nullptr, build.get(), judge.get(), &render, &store, clock.get()}, mc, sc);
  for (auto& e : episodes) sched.add(std::move(e));
  return sched.run();
}

}  // namespace

std::map<std::string, AttemptRecord> eval_records(const fs::path& out) {
  std::map<std::string, AttemptRecord> m;
  for (auto& r : load_attempts(out).records) m[r.task] = std::move(r);
  return m;
}

int run_eval(const EvalCommand& cmd) {
  EvalSetup es;
  if (int rc = select_kernels(cmd, es)) return rc;
  if (int rc = check_eval_out(cmd, es)) return rc;
  if (int rc = make_eval_profile(cmd, es)) return rc;
  if (int rc = open_eval(cmd, es)) return rc;
  if (int rc = make_eval_setup(cmd, es)) return rc;
  record_invocation(*es.run, 0, false);  // being written: incomplete until the end says otherwise
  std::printf("%-44s %6s %-16s %-22s %10s %10s %8s\n", "task", "sample", "outcome", "sub_kind", "cand ms",
              "ref ms", "speedup");
  std::vector<std::string> unchanged;  // tasks skipped: judged before, same source
  EvalStore store(*es.run);
  const RunTally tally = judge_episodes(cmd, es, eval_episodes(cmd, es, unchanged), store);
  const int passed = tally.passes, infra = tally.infra_errors, done = tally.attempts;
  TritonBenchTally tb = tally.tritonbench;
  tb.interpreter = es.runners[0]->config().device == "cpu";
  std::map<std::string, std::string> unusable = store.unusable;  // task -> why its reference cannot be used
  for (const auto& [task, why] : tally.unusable) unusable.emplace(task, why);
  // A test block's reference that failed on a fresh worker: the task is unusable (its
  // traceback is in result.json's message).
  for (const auto& tj : es.judging)
    for (const auto& r : es.runners)
      if (auto it = r->unusable().find(tj.task->id); it != r->unusable().end())
        unusable.emplace(tj.task->id, "the reference failed its test block: " + it->second);
  write_unusable(cmd.out, unusable);
  record_invocation(*es.run,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - es.started).count(),
                    !tally.interrupted);
  if (!unchanged.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unchanged.size() && i < 20; ++i) list += (i ? ", " : "") + unchanged[i];
    if (unchanged.size() > 20) list += ", ...";
    std::printf("skipped %zu unchanged kernel(s) already judged in %s: %s\n", unchanged.size(),
                cmd.out.string().c_str(), list.c_str());
  }
  std::printf("\n%d/%d passed (%d evaluated now, %zu recorded in %s)\n", passed, done - infra, done,
              es.run->attempt_count(), (cmd.out / "attempts.jsonl").string().c_str());
  if (const std::string line = pass_at_k_line(cmd.out); !line.empty()) std::printf("%s\n", line.c_str());
  if (const std::string line = tb.line(); !line.empty()) std::printf("%s\n", line.c_str());
  for (const auto& [task, why] : unusable)
    std::cerr << "kforge eval: task " << task << " is unusable: " << truncate_middle(why, 600) << "\n";
  if (!unusable.empty())
    std::printf("%zu task(s) unusable: the reference failed on a fresh worker (listed in %s)\n",
                unusable.size(), (cmd.out / "unusable.json").string().c_str());
  if (tally.interrupted) {
    std::cerr << "kforge eval: interrupted; the kernels judged so far are recorded in " << cmd.out.string()
              << " (run the same command again to judge the rest)\n";
    return 130;
  }
  if (infra > 0) {
    std::printf(
        "%d attempt(s) could not be judged (infra_error: kforge's toolchain, runner or reference "
        "failed; not scored)\n",
        infra);
    std::cerr << "kforge eval: " << infra
              << " attempt(s) could not be judged (infra_error: toolchain, runner or reference failure)\n";
    return kExitInfraError;
  }
  return 0;
}

}  // namespace kforge::agent
