// kforge/backends/runner_client.hpp — the agent side of the warm kforge-runner worker
// (docs/judge.md), and its JSON-lines protocol.
//
// A RunnerClient owns one kforge-runner child process (sandbox::LineChild), the judge, bound
// to one device ("cpu" or "cuda:N"). It loads a task once and then checks and benchmarks many
// candidates. Candidates never run in the judge: it starts a confined kforge-host per
// candidate (docs/ARCHITECTURE.md, "The trust boundary"), so a crash, exit() or hang of a
// candidate is the judge's verdict (runtime_error / timeout / forbidden_api), within the
// deadline_ms the client passes. A judge that dies, hangs past the client's timeout, answers
// with the wrong request id or an error is infra_error (sub-kinds judge_died, judge_timeout,
// judge_protocol, runner_failed, reference_failed, python_exception, runner): kforge's own
// failure, never charged to the model. No cascades (issue 21 §1): after any infra failure or a
// failed reference the worker is killed, so the next request starts a fresh one (a reference
// may leave the embedded interpreter or the device unusable); a check or bench that failed so
// is judged once more on a fresh worker before its infra_error stands (CheckResult::retried),
// and a reference that fails on a fresh worker (a load, or a test block's reference) makes its
// task unusable: later requests for it answer at once, without a worker (unusable()). Workers
// are also recycled after RunnerConfig::recycle_after candidates. A RunnerClient is NOT
// thread-safe: one owner at a time, except abandon_loads(), which any thread may call (a run
// that stops while a reference loads does not wait for it).
//
// Protocol: one JSON object per line each way. The worker first prints {"ok":true,"ready":true}.
// Every request carries a fresh "id" that its reply echoes.
//   {"cmd":"hello"} -> versions (libtorch, torch, python, triton, cuda_available, devices[],
//        reference_tf32 {matmul, cudnn}: whether PyTorch lets the reference use TF32)
//   {"cmd":"peaks","device"} -> {"dram_bytes_per_s","flops_per_s","method"} (measure_peaks)
//   {"cmd":"prewarm","host","device"} -> {"started"}: the candidate host of that kind (native or
//        python) started before the first check, not waited for (the Triton zygote; prewarm)
//   {"cmd":"profile_setup","artifact","dir","seed"} -> {"candidate":[argv],"reference":[argv]}:
//        writes dir/profile_tensors.bin and dir/profile_reference.json for the current task and
//        names the two processes to run under Nsight Compute (profile_targets; profile.hpp)
//   {"cmd":"load","task","file","source","device","model_seed","flops","bytes","module_mode"} ->
//        {"inputs":[spec],"outputs":[spec],"input_bytes","flops","bytes","flops_source","bytes_source",
//        "load_ms","cached"} (flops without a formula: PyTorch's FLOP counter, "estimated"); spec =
//        {name, kind (input|parameter|buffer|output), shape, dtype}. The worker keeps the most
//        recently used tasks loaded (KFORGE_RUNNER_TASKS, default 8, at most KFORGE_RUNNER_TASK_MB
//        MiB of parameters, default 8192): loading one of them again only selects it
//        ("cached": true). check and bench use the task of the last successful load.
//        module_mode "train" runs the Model in training mode (no .eval(); BatchNorm batch
//        statistics, Dropout live), "eval" after .eval(). The client also appends the line
//        `__kforge_module_mode__ = "<mode>"` to the source it sends, which the runner reads when
//        the request field is not forwarded. A reference whose outputs differ between two runs
//        on the same inputs fails to load with a message starting "unjudgeable:".
//   {"cmd":"reference","trials","seed"} -> {"ms":[...]} (runs the reference only)
//   {"cmd":"check","artifact","trials","seed","deadline_ms","tolerances":{dtype:[atol,rtol]}} ->
//        {"outcome","sub_kind","message","trials_passed","max_abs_err","max_rel_err",
//         "tolerance_ratio","mismatch_fraction","worst_index","expected","actual","check_ms",
//         "checks":[what ran],"phases","correct"?,"correct_message"?,"trial"?};
//        "trial" (an output_mismatch): the failing trial, {"index","of","kind" ("standard",
//        "parameters perturbed", "wider inputs"),"seed","input_scale"}, also named in "message".
//        a torch_fallback's outputs are still compared, its outcome stays torch_fallback:
//        "correct" says whether they matched on every trial (issue 22 §3; false with
//        "correct_message" saying why, absent when they could not be compared).
//        the candidate only ever sees copies of the inputs and parameters (cpu: read-only).
//        Error figures (runner Comparison, on passes too, max over trials and outputs):
//        max_abs_err = max |a - e|; max_rel_err = max |a - e| / (|e| + atol); tolerance_ratio =
//        max |a - e| / (atol_eff + rtol |e|) (<= 1 within tolerance), atol_eff = min(atol,
//        0.01 rms(e)). Integer and bool outputs compare exactly.
//   {"cmd":"bench","artifact"?,"reps","min_reps","warmup","budget_ms","baseline","seed",
//    "deadline_ms","peak_bytes_per_s"?} -> {"candidate":stats,"reference":stats,
//         "reference_compile"?:stats, "candidate_ms","reference_ms","speedup","speedup_ci":[lo,hi],
//         "sets","timing":"judge_clock","verified_batches","speed_of_light_ms","peak_bytes_per_s",
//         "launch_floor_ms","timing_anomaly"?,"timing_anomaly_kind"?,"phases","flags":[],"bench_ms",
//         "reference_before"?:stats,"reference_before_ms"?,"timing_unstable"?}; stats =
//         {median_ms,p10_ms, p90_ms,mean_ms,min_ms,cv,reps,batches,samples_ms} over batches (one sample per
//         batch of `sets` calls, timed by the judge's clock); or a failure {"outcome","sub_kind","message"}
//         (output_mismatch/bench_only: wrong on a verified timed repetition).
//   {"cmd":"triton_bench","seed"} -> {"ms"}: the reference timed by triton.testing.do_bench
//   Every request naming an "artifact" also carries "host" ("native": kforge-host, "python": the
//        Triton host; host_kind.hpp), the host its backend needs; the client always sends it,
//        and a request without it (an older client) gets the host the artifact's name implies.
//   Any request may carry "timed_lock_held": true: the client holds the device's timed lock
//        (timed_lock.hpp) for the whole request, so the judge takes none itself. Otherwise a
//        check's calibration takes it (waiting at most 250 ms; a check whose calibration ran
//        without it is not reused by the bench); the phases then include
//        "device_lock_wait_ms". hello's devices[] name each GPU's lock ("timed_lock").
//   Errors: {"ok":false,"error":"python_exception|runner|protocol|reference_failed","message"};
//        reference_failed: a test block's reference raised (message: its whole traceback), or
//        its two runs under one seed disagree beyond what a comparison can leave out (message
//        starting "unjudgeable:": the client's sub-kind `unjudgeable`). A `testblock` pass whose
//        comparison left out elements the gold leaves unwritten or nondeterministic says so
//        in "message" ("seed S: result j compared on N of M elements: ...").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/backends/host_kind.hpp"
#include "kforge/backends/timed_lock.hpp"
#include "kforge/common/failure.hpp"
#include "kforge/common/outcome.hpp"

namespace kforge::sandbox {
class LineChild;
}

namespace kforge::backends {

struct RunnerConfig {
  /// The kforge-runner executable; empty: $KFORGE_RUNNER, else the build tree's.
  std::filesystem::path runner;
  std::string device = "cpu";                        ///< "cpu" or "cuda:N"
  int recycle_after = 50;                            ///< candidates per worker before it is replaced
  std::chrono::milliseconds start_timeout{180'000};  ///< import torch can take ~4 s, more under load
  std::chrono::milliseconds load_timeout{300'000};
  std::chrono::milliseconds check_timeout{60'000};
  /// A test block (TritonBench): the reference's runs (the gold twice per seed, its Triton
  /// kernels compiled and autotuned cold), which never count against the candidate, and the
  /// candidate's check (its kernels, too, compile and autotune cold in a fresh host: G gold files
  /// autotune over up to ~30 configurations). The client waits for the sum.
  std::chrono::milliseconds testblock_reference_timeout{240'000};
  std::chrono::milliseconds testblock_check_timeout{150'000};
  std::chrono::milliseconds bench_timeout{180'000};
  /// The devices' locks for timed work (timed_lock.hpp), not owned; null: default_timed_lock().
  TimedLock* timed_lock = nullptr;
};

/// The judge's error replies ({"ok":false,"error":E,"message":M}), a closed set: any other
/// value of "error" is itself a protocol failure naming the field.
enum class JudgeError { python_exception, runner, protocol, reference_failed };

/// Parses a reply's "error" field; std::nullopt for a value outside JudgeError.
std::optional<JudgeError> judge_error_from_string(const std::string& s);

/// Whose machinery an error reply `error` (with its message `text`) says failed, and the sub-kind
/// recorded for it: reference_failed is FailureKind::reference (sub-kind "unjudgeable" when the
/// reference ran but its own runs disagree, the message starting "unjudgeable:"), every other
/// error FailureKind::judge under its own name. The one place a judge reply's failure is typed.
Failure judge_failure(JudgeError error, const std::string& text);

/// Whether a failure says the reference itself failed (raised, its worker failed under it, or its
/// own runs disagree): the task's fault, never the candidate's and never the judge's machinery.
inline bool reference_unusable(const std::optional<FailureKind>& failure) {
  return failure == FailureKind::reference;
}

/// The kforge-runner path RunnerConfig's default resolves to.
std::filesystem::path default_runner_path();

struct TensorSpec {
  std::string name, kind, dtype;
  std::vector<int64_t> shape;
};

/// What the runner needs to know about a task; the source has its profile applied.
struct TaskRef {
  std::string id;
  std::filesystem::path file;
  std::string source;
  /// dtype name ("float32", ..., or "*") -> (atol, rtol); missing dtypes use the defaults.
  std::map<std::string, std::pair<double, double>> tolerances;
  std::string flops_expr, bytes_expr;  ///< the suite's formulas (Python, over the constants)
  std::string module_mode = "eval";    ///< "train" or "eval": how the reference Model runs (Task)
  /// (triton) ATen ops the candidate may run besides allocation, views and copies (the task's
  /// and --allow-ops); sent with check and bench.
  std::vector<std::string> allow_ops;
  /// TritonBench tasks (test_source not empty): `source` is the implementation before the
  /// separator, the test block runs over it in the judge and over the candidate in its host
  /// (the `testblock` request), and the candidate must define `entries`. No model is loaded.
  std::string test_source, test_function;
  std::vector<std::string> entries;
  /// TritonBench: the task's performance script (benchmarks Task::perf_script), what
  /// bench_tritonbench() times it on; "" when none.
  std::string perf_script;
  /// Bytes of one set of get_inputs() tensors, estimated from the source's shapes by the task
  /// model (benchmarks: estimate_input_bytes); 0 = unknown. Only for messages (a worker killed
  /// while loading: likely out of memory, and how much the task needs).
  double input_bytes_estimate = 0;
  bool test_block() const { return !test_source.empty(); }
  std::string cache_key() const;  ///< identifies (id, source, mode): a reload is skipped when equal
};

/// The explanation appended to a load that failed because the worker was killed by SIGKILL
/// (the kernel's OOM killer, usually): likely out of memory, the task's input bytes
/// (input_bytes_estimate, when known), the machine's memory, and the profiles to try.
std::string load_killed_hint(const TaskRef& task);

/// A loaded task (RunnerClient::load). A load that fails is a Failure{reference,
/// "reference_failed", the Python traceback or the worker's failure}: a reference that raises or
/// takes its worker down is the task's fault, never the judge's or a candidate's.
struct LoadResult {
  std::vector<TensorSpec> inputs, outputs;
  int64_t input_bytes = 0;
  double flops = 0, bytes = 0;  ///< per call, from the task's formulas (0: none given)
  /// Where `flops` comes from: "declared" (the task's formula), "estimated" (PyTorch's FLOP
  /// counter over one reference call, in the runner at load), "" (none counted); `bytes`:
  /// "declared", or "estimated" when no formula was given (the caller's inputs + outputs bytes).
  std::string flops_source, bytes_source;
  double load_ms = 0;
  bool cached = false;  ///< the worker still held the task: selected, not rebuilt
};

/// A device's peaks as the judge measured them.
struct MeasuredPeaks {
  double dram_bytes_per_s = 0;  ///< best of fills (bytes written / s) and copies ((read + written) / s)
  double flops_per_s = 0;       ///< FP32 matmul, 2 n^3 / time, TF32 off
  std::string method;           ///< sizes and repetitions, free text
};

/// The two command lines of the profile step (profile.hpp): the candidate host's profile mode
/// on the artifact and the runner's reference-call mode, each making one untimed and one
/// profiled call.
struct ProfileTargets {
  std::vector<std::string> candidate, reference;
};

struct CheckResult {
  Outcome outcome = Outcome::runtime_error;
  std::string sub_kind;
  std::string message;
  /// Whose machinery failed, set exactly when outcome is infra_error: decided where the failure
  /// happened (the judge's reply, the client's wait) and carried unchanged to the record.
  std::optional<FailureKind> failure;
  int trials = 0, trials_passed = 0;
  double max_abs_err = 0, max_rel_err = 0, mismatch_fraction = 0;
  double tolerance_ratio = 0;  ///< reply field "tolerance_ratio" (see the protocol above); 0 = not reported
  double check_ms = 0;
  std::map<std::string, double> phases_ms;  ///< where the judge's check time went (reply "phases")
  std::vector<std::string> checks;          ///< what the check ran, one line each (reply "checks")
  bool worker_replaced = false;             ///< the candidate took the worker down
  bool retried = false;  ///< the first try was an infra failure; this is the fresh worker's result
  /// A torch_fallback's outputs, still compared (reply "correct"): whether they matched the
  /// reference on every trial; nullopt when not compared (other outcomes: the outcome says).
  std::optional<bool> correct;
  std::string correct_message;  ///< why they did not (reply "correct_message")
  /// The failing trial of an output_mismatch (reply "trial"): index (1-based) of `of`, kind
  /// ("standard", "parameters perturbed", "wider inputs"), seed, input scale; index 0: none.
  struct Trial {
    int index = 0, of = 0;
    std::string kind;
    int64_t seed = 0;
    double input_scale = 0;
  } trial;
};

struct TimingStats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, min_ms = 0, cv = 0;
  int reps = 0;
};

struct BenchOptions {
  int reps = 100;     ///< repetitions at most
  int min_reps = 10;  ///< repetitions at least, whatever the budget
  int warmup = 5;
  double budget_ms = 5000;        ///< per timed function, after min_reps
  bool compile_baseline = false;  ///< also time torch.compile(model)
  /// Bytes/s to use as the device's peak bandwidth in the speed-of-light bound instead of the
  /// judge's measurement (0: measure). For tests and for devices the measurement misjudges.
  double peak_bytes_per_s = 0;
  int64_t seed = 2000;
  /// TritonBench tasks (tritonbench_perf.hpp): how many of the performance script's inputs to
  /// time, spread evenly over them, the first and the last included; 0 = all, as TritonBench.
  int perf_inputs = 0;
  /// Time the reference before the candidate as well as after it (request "reference_before"):
  /// the two are compared for timing_unstable (docs/judge.md, "Timing and peaks").
  bool reference_before = true;
  /// A bench that comes back timing_unstable is timed once more (check_and_bench), and the second
  /// result kept.
  bool retime_unstable = true;
};

/// The timing of one TritonBench performance input (tritonbench_perf.hpp; ms per call, medians
/// over the judge's batches, and the batches themselves).
struct PerfInputTiming {
  int input = 0;
  double candidate_ms = 0, reference_ms = 0;
  double bytes = 0, flops = 0;  ///< of one call, by the script's formulas
  std::vector<double> candidate_samples, reference_samples;
};

struct BenchResult {
  bool ok = false;  ///< false: the candidate failed while timed (outcome/message say how)
  Outcome outcome = Outcome::runtime_error;
  std::string sub_kind, message;
  std::optional<FailureKind> failure;  ///< as CheckResult::failure
  TimingStats candidate, reference;
  std::optional<TimingStats> reference_compile;
  double candidate_ms = 0;  ///< the candidate's time used for speedup (see flags)
  double reference_ms = 0;
  double speedup = 0;                              ///< reference_ms / candidate_ms
  double speedup_ci_low = 0, speedup_ci_high = 0;  ///< 95% percentile-bootstrap interval over batches
  int sets = 0;                                    ///< input/output sets the timed calls rotated through
  int sets_per_window =
      0;  ///< of them, run in one timed window (the Triton host: at most 16; judge.cpp chunk_sets)
  /// What the judge subtracts from each timed batch without a lead-in (ms): a timed window around
  /// a run of no sets, measured before the candidate was loaded.
  double round_trip_ms = 0;
  /// The Triton host's own account of a timed request, medians over requests: first_call_ms,
  /// calls_ms, sync_ms (ms) and slots_taken (a count: allocations handed a set's output, so
  /// written in place). The candidate's process's word: diagnostics only, never used.
  std::map<std::string, double> host_reported_ms;
  /// The judge's own diagnostics of the timed windows (GPU): the calibration's base windows
  /// (base_gpu_ms_median, which gpu_base_ms is, and base_gpu_ms_max), the timed windows before
  /// the base is taken off (window_gpu_ms_median), and how long the freezes at the host's reply
  /// waited (freeze_us_median, base_freeze_us_median). Never used in a time.
  std::map<std::string, double> judge_side;
  /// On a GPU: the timed window behind the lead-in around a run of no sets, on the judge's clock
  /// (ms; 0 = no lead-in, round_trip_ms was subtracted), and on the GPU's clock from the
  /// lead-in's end to the judge's stamp: what each batch behind a lead-in subtracts (ms;
  /// lead_in_ms where the stamp could not be read); how many batches it dropped because the
  /// lead-in was preempted, and the largest timer gap (us) of a lead-in that was not (how near
  /// honest spins come to the 10 us threshold); the lead-in's length (ms) (judge.cpp, lead_in.hpp).
  double lead_in_ms = 0;
  double gpu_base_ms = 0;
  int lead_in_preempted = 0;
  double lead_in_max_gap_us = 0;
  double lead_in_length_ms = 0;
  std::map<std::string, double> phases_ms;  ///< where the judge's bench time went (reply "phases")
  /// The judge's bound: the outputs' bytes at the device's measured peak bandwidth (ms per
  /// call; 0 = no bound: outputs that fit in the cache, or no measurement).
  double speed_of_light_ms = 0;
  double peak_bytes_per_s = 0;  ///< the bandwidth the bound used (measured, or BenchOptions')
  /// On a GPU: one kernel launch's GPU time, back to back in the judge's own context, measured
  /// before the candidate was loaded (ms); a candidate_ms below half of it is a timing_anomaly.
  /// 0 = not measured (CPU, no lead-in).
  double launch_floor_ms = 0;
  std::string timing_anomaly;  ///< why candidate_ms is physically impossible; "" = it is not
  /// Which bound it broke: "speed_of_light" (its outputs' bytes at the measured peak) or
  /// "launch_floor" (below half of one kernel launch: launch_floor_ms); "" = none.
  std::string timing_anomaly_kind;
  /// Why the figures are too noisy to steer by ("" = they are not): the reference timed before
  /// and after the candidate disagree by more than 20%, or the candidate's or the reference's
  /// batch CV is above 0.2 (judge.cpp unstable_reason; docs/judge.md "Timing and peaks").
  std::string timing_unstable;
  double reference_before_ms = 0;  ///< the reference's median timed before the candidate (0: not)
  int timings = 1;                 ///< benches this result took: 2 when re-timed (check_and_bench)
  std::vector<std::string> flags;
  /// The bench's wall time: the judge's, plus the wait for the device's timed lock (phases_ms
  /// "device_lock_wait_ms"; never part of a measured time).
  double bench_ms = 0;
  bool retried = false;  ///< as CheckResult::retried
  /// The judge's per-batch times, ms per call (reply candidate/reference "samples_ms"), for
  /// intervals over several benches.
  std::vector<double> candidate_samples, reference_samples;
  /// A TritonBench task (bench_tritonbench): each performance input; candidate_ms and
  /// reference_ms are then their sums, speedup TritonBench's Speed Up.
  std::vector<PerfInputTiming> perf_inputs;
};

class RunnerClient {
 public:
  explicit RunnerClient(RunnerConfig cfg);
  ~RunnerClient();
  RunnerClient(const RunnerClient&) = delete;
  RunnerClient& operator=(const RunnerClient&) = delete;

  // Every request's failure is a value (Expected<T>, kforge/common/failure.hpp): its
  // FailureKind says whose machinery failed (judge, reference), decided here, where it happens.

  /// Versions and devices as the worker reports them (JSON text), or the judge's failure.
  Expected<std::string> hello();
  /// Asks the worker to start what candidates of `host` need before the first check (the Triton
  /// zygote: torch and Triton imported while the first candidates are still being built).
  /// Returns at once: the worker starts it without waiting for it; false when the worker did not
  /// take the request (nothing is lost: the first check starts what it needs).
  bool prewarm(HostKind host);
  /// This runner's device measured by the judge (issue 11 §1: a copy/fill for DRAM bandwidth,
  /// an FP32 matmul with TF32 off for FLOP/s); nullopt when the worker failed. Takes about a
  /// second on a GPU, a few on a CPU; callers cache the result (roofline.hpp's peaks file).
  std::optional<MeasuredPeaks> measure_peaks();
  /// Has the judge write the profile step's files for `task` into `dir` (inputs under `seed`,
  /// parameters, output specs; the reference's load request) and name the processes to
  /// profile; a failure when the task does not load or the files cannot be written.
  /// `host`: the candidate host (Backend::host_kind); std::nullopt: the one the artifact's
  /// name implies (host_kind_for_artifact). The same for check and bench.
  Expected<ProfileTargets> profile_targets(const TaskRef& task, const std::filesystem::path& artifact,
                                           const std::filesystem::path& dir, int64_t seed,
                                           std::optional<HostKind> host = {});
  /// Loads the task unless it is already loaded; a failed load is a Failure{reference} whose
  /// message is the traceback or the worker's failure (LoadResult). A load ended by
  /// abandon_loads() is Failure{judge, "abandoned"}: not retried, the task not marked unusable.
  Expected<LoadResult> load(const TaskRef& task);
  /// Ends the load() in flight, if any, at once: its worker is killed (and reaped by the load's
  /// own thread, which answers "abandoned"); the next request starts a fresh worker. Every later
  /// load() answers "abandoned" at once (a stopping run needs no load; checks and benches, which
  /// load their task themselves, are untouched). Thread-safe.
  void abandon_loads();
  /// Checks the artifact on `trials` fresh input sets (seeds seed, seed+1, ...); a TritonBench
  /// task (TaskRef::test_block()) by running its test block under those seeds.
  CheckResult check(const TaskRef& task, const std::filesystem::path& artifact, int trials, int64_t seed,
                    std::optional<HostKind> host = {});
  /// Times the candidate and the reference in this worker; artifact empty: reference only.
  BenchResult bench(const TaskRef& task, const std::filesystem::path& artifact, const BenchOptions& opt,
                    std::optional<HostKind> host = {});
  /// The reference timed by triton.testing.do_bench in the worker (median ms).
  Expected<double> triton_do_bench(const TaskRef& task, int64_t seed);
  /// Runs the reference alone for `trials` seeds (suite validation): each run's ms.
  Expected<std::vector<double>> reference_only(const TaskRef& task, int trials, int64_t seed);

  /// Waits for this runner's device's timed lock (timed_lock.hpp) and holds it until the hold
  /// ends. bench, measure_peaks and triton_do_bench hold it around their request (sent with
  /// "timed_lock_held", the wait outside the request's timeout), the ncu profile step around
  /// Nsight Compute; `what` names the work in the test log. Mode::shared: untimed work on the
  /// device (a check, the reference's load and runs), sent with "timed_lock_shared": it runs
  /// beside other runners' checks but never inside their timed work (timed_lock.hpp).
  /// `max_wait`: give up after it (TimedHold::State::busy); max(): wait as long as it takes.
  TimedHold hold_timed(const std::string& what, TimedLock::Mode mode = TimedLock::Mode::exclusive,
                       std::chrono::milliseconds max_wait = std::chrono::milliseconds::max());
  /// The lock's name: "cpu", or the GPU's from the worker's hello ("cuda-<PCI bus id>").
  std::string timed_lock_name();

  const RunnerConfig& config() const { return cfg_; }
  int workers_started() const { return workers_started_; }
  /// Tasks (by id) whose reference failed on a fresh worker -> the failure's one-line headline
  /// (python_errors.hpp failure_headline). Requests for them cost nothing after the first.
  const std::map<std::string, std::string>& unusable() const { return unusable_by_id_; }
  /// The full failure text (the Python traceback) of an unusable task; "" when it is not.
  std::string unusable_detail(const TaskRef& task) const;

 private:
  struct Reply;
  Reply request(nlohmann::json req, std::chrono::milliseconds timeout);
  int exclusive_holds_ = 0;  ///< this client's exclusive holds of its device's lock (hold_timed)
  /// Sends a check request (`check`, or `testblock` for a TritonBench task: judge.hpp
  /// check_testblock) and reads its reply.
  CheckResult run_check(nlohmann::json req, int trials, std::chrono::milliseconds timeout);
  /// The infra_error sub-kind for a request that got no reply (judge_timeout, judge_died, ...).
  static std::string reply_kind_name(const Reply& r);
  bool ensure_started(std::string* error);
  void kill_worker();
  /// Replaces the worker (null: none) under child_mu_, so abandon_loads never sees a freed one;
  /// the old one is reaped after the lock is released.
  void set_child(std::unique_ptr<sandbox::LineChild> c);
  Expected<LoadResult> ensure_loaded(const TaskRef& task);
  /// The shared hold a load runs under, waited for in short steps so that abandon_loads ends the
  /// wait too (then an unheld hold: the load is abandoned).
  TimedHold hold_for_load();
  /// One load request (no retry).
  Expected<LoadResult> load_once(const TaskRef& task);
  CheckResult check_once(const TaskRef& task, const std::filesystem::path& artifact, int trials, int64_t seed,
                         HostKind host);
  BenchResult bench_once(const TaskRef& task, const std::filesystem::path& artifact, const BenchOptions& opt,
                         HostKind host);
  /// Records that the task's reference failed on a fresh worker (`detail`: the full text).
  void mark_unusable(const TaskRef& task, const std::string& detail);
  /// The remembered failure of an unusable task, as a load error; nullopt when it is usable.
  std::optional<std::string> known_unusable(const TaskRef& task) const;

  RunnerConfig cfg_;
  std::unique_ptr<sandbox::LineChild> child_;  ///< written by the owner only, under child_mu_
  std::mutex child_mu_;                        ///< child_'s changes, against abandon_loads
  bool loading_ = false;                ///< a load() is in flight (written by the owner under child_mu_)
  std::atomic<bool> abandoned_{false};  ///< abandon_loads() was called (for good)
  std::string loaded_key_;
  LoadResult loaded_;
  int candidates_on_worker_ = 0;
  int workers_started_ = 0;
  uint64_t request_seq_ = 0;
  int task_requests_on_worker_ = 0;  ///< load/check/bench/... sent to the current worker
  bool last_request_fresh_ = false;  ///< the last request was the worker's first task request
  std::map<std::string, std::string> unusable_detail_;  ///< TaskRef::cache_key -> full failure text
  std::map<std::string, std::string> unusable_by_id_;   ///< task id -> headline
  std::string lock_name_;                               ///< timed_lock_name(), once known
};

}  // namespace kforge::backends
