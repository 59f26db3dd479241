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
// Protocol: kforge/backends/runner_protocol.hpp declares every request and reply as a type with
// its JSON mapping (both ends use it); a reply that does not fit its type is
// infra_error/judge_protocol naming the field. What the client relies on besides:
//   load: the worker keeps the most recently used tasks loaded (KFORGE_RUNNER_TASKS, default 8,
//        at most KFORGE_RUNNER_TASK_MB MiB of parameters, default 8192): loading one of them again
//        only selects it ("cached"). check and bench use the task of the last successful load.
//        module_mode "train" runs the Model in training mode (no .eval(); BatchNorm batch
//        statistics, Dropout live), "eval" after .eval(). The client also appends the line
//        `__kforge_module_mode__ = "<mode>"` to the source it sends, which the runner reads when
//        the request field is not forwarded. A reference whose outputs differ between two runs
//        on the same inputs fails to load with JudgeError::unjudgeable.
//   check: "trial" (an output_mismatch) names the failing trial, also named in "message". A
//        torch_fallback's outputs are still compared, its outcome stays torch_fallback: "correct"
//        says whether they matched on every trial (issue 22 §3). The candidate only ever sees
//        copies of the inputs and parameters (cpu: read-only).
//   Every request naming an "artifact" also carries "host" ("native": kforge-host, "python": the
//        Triton host; host_kind.hpp), the host its backend needs; the client always sends it,
//        and a request without it (an older client) gets the host the artifact's name implies.
//   Any request may carry "timed_lock_held": true: the client holds the device's timed lock
//        (timed_lock.hpp) for the whole request, so the judge takes none itself. Otherwise a
//        check's calibration takes it (waiting at most 250 ms; a check whose calibration ran
//        without it is not reused by the bench); the phases then include
//        "device_lock_wait_ms". hello's devices[] name each GPU's lock ("timed_lock").
//   Errors (JudgeError): reference_failed: a test block's reference raised (message: its whole
//        traceback); unjudgeable: the reference's own runs under one seed disagree beyond what a
//        comparison can leave out, or its test block cannot tell stubs from the gold (the client's
//        Failure{reference, "unjudgeable"}). A `testblock` pass whose comparison left out
//        elements the gold leaves unwritten or nondeterministic says so in "message" ("seed S:
//        result j compared on N of M elements: ...").
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
#include "kforge/backends/runner_protocol.hpp"
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
  /// autotune over up to ~30 configurations). The client waits for the sum; the runner stops a
  /// reference's part at its timeout (reference_failed "did not finish within": the task unusable).
  std::chrono::milliseconds testblock_reference_timeout{240'000};
  std::chrono::milliseconds testblock_check_timeout{150'000};
  std::chrono::milliseconds bench_timeout{180'000};
  /// The devices' locks for timed work (timed_lock.hpp), not owned; null: default_timed_lock().
  TimedLock* timed_lock = nullptr;
};

/// Whether a failure says the reference itself failed (raised, its worker failed under it, or its
/// own runs disagree): the task's fault, never the candidate's and never the judge's machinery.
inline bool reference_unusable(const std::optional<FailureKind>& failure) {
  return failure == FailureKind::reference;
}

/// The kforge-runner path RunnerConfig's default resolves to.
std::filesystem::path default_runner_path();

using protocol::TensorSpec;
using protocol::TimingStats;

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
/// "reference_failed" (or "unjudgeable"), the Python traceback or the worker's failure}: a
/// reference that raises or takes its worker down is the task's fault, never the judge's or a
/// candidate's.
using LoadResult = protocol::LoadReply;

/// A device's peaks as the judge measured them.
using MeasuredPeaks = protocol::PeaksReply;

/// The two command lines of the profile step (profile.hpp): the candidate host's profile mode
/// on the artifact and the runner's reference-call mode, each making one untimed and one
/// profiled call.
using ProfileTargets = protocol::ProfileSetupReply;

/// A check's verdict: the judge's reply (protocol::CheckReply; check_ms here is the client's wall
/// time of the request) and what the client adds.
struct CheckResult : protocol::CheckReply {
  /// Whose machinery failed, set exactly when outcome is infra_error: decided where the failure
  /// happened (the judge's reply, the client's wait) and carried unchanged to the record.
  std::optional<FailureKind> failure;
  bool worker_replaced = false;  ///< the candidate took the worker down
  bool retried = false;          ///< the first try was an infra failure; this is the fresh worker's result
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

/// A bench's result: the judge's reply (protocol::BenchReply; bench_ms here adds the wait for the
/// device's timed lock, phases_ms "device_lock_wait_ms", never part of a measured time) and
/// what the client adds.
struct BenchResult : protocol::BenchReply {
  bool ok = false;                     ///< false: the candidate failed while timed (outcome/message say how)
  std::optional<FailureKind> failure;  ///< as CheckResult::failure
  int timings = 1;                     ///< benches this result took: 2 when re-timed (check_and_bench)
  bool retried = false;                ///< as CheckResult::retried
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
  /// `host`: the candidate host the artifact's backend needs (Backend::host_kind; never implied
  /// by the artifact's name). The same for check and bench.
  Expected<ProfileTargets> profile_targets(const TaskRef& task, const std::filesystem::path& artifact,
                                           const std::filesystem::path& dir, int64_t seed, HostKind host);
  /// Loads the task unless it is already loaded; a failed load is a Failure{reference} whose
  /// message is the traceback or the worker's failure (LoadResult). A load ended by
  /// abandon_loads() is Failure{cancelled, "abandoned"}: not retried, the task not marked unusable.
  Expected<LoadResult> load(const TaskRef& task);
  /// Ends the load() in flight, if any, at once: its worker is killed (and reaped by the load's
  /// own thread, which answers "abandoned"); the next request starts a fresh worker. Every later
  /// load() answers "abandoned" at once (a stopping run needs no load; checks and benches, which
  /// load their task themselves, are untouched). Thread-safe.
  void abandon_loads();
  /// Checks the artifact on `trials` fresh input sets (seeds seed, seed+1, ...); a TritonBench
  /// task (TaskRef::test_block()) by running its test block under those seeds.
  CheckResult check(const TaskRef& task, const std::filesystem::path& artifact, int trials, int64_t seed,
                    HostKind host);
  /// Times the candidate and the reference in this worker; artifact empty: reference only (`host`
  /// then unused).
  BenchResult bench(const TaskRef& task, const std::filesystem::path& artifact, const BenchOptions& opt,
                    HostKind host);
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
  /// (python_traceback.hpp failure_headline). Requests for them cost nothing after the first.
  const std::map<std::string, std::string>& unusable() const { return unusable_by_id_; }
  /// The full failure text (the Python traceback) of an unusable task; "" when it is not.
  std::string unusable_detail(const TaskRef& task) const;

 private:
  struct Reply;
  Reply request(protocol::Request req, std::chrono::milliseconds timeout);
  int exclusive_holds_ = 0;  ///< this client's exclusive holds of its device's lock (hold_timed)
  /// Sends a check request (`check`, or `testblock` for a TritonBench task: judge.hpp
  /// check_testblock) and reads its reply.
  CheckResult run_check(protocol::Request req, int trials, std::chrono::milliseconds timeout);
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
  /// The worker's hello, typed.
  Expected<protocol::HelloReply> hello_reply();
  /// A request's typed reply: the decoded body, or the failure the wait or the reply reports
  /// (judge_failure of an error reply; judge_protocol for a body that does not fit R).
  template <class R>
  Expected<R> ask(protocol::Request req, std::chrono::milliseconds timeout);
  CheckResult check_once(const TaskRef& task, const std::filesystem::path& artifact, int trials, int64_t seed,
                         HostKind host);
  BenchResult bench_once(const TaskRef& task, const std::filesystem::path& artifact, const BenchOptions& opt,
                         HostKind host);
  /// Records that the task's reference failed on a fresh worker (`detail`: the full text).
  void mark_unusable(const TaskRef& task, const Failure& failure);
  /// The failure that made the task unusable (its sub-kind as typed then: reference_failed or
  /// unjudgeable), with `message`; std::nullopt when it is usable.
  std::optional<Failure> unusable_failure(const TaskRef& task, const std::string& message) const;
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
  int task_requests_on_worker_ = 0;                 ///< load/check/bench/... sent to the current worker
  bool last_request_fresh_ = false;                 ///< the last request was the worker's first task request
  std::map<std::string, Failure> unusable_detail_;  ///< TaskRef::cache_key -> the failure, its full text
  std::map<std::string, std::string> unusable_by_id_;  ///< task id -> headline
  std::string lock_name_;                              ///< timed_lock_name(), once known
};

}  // namespace kforge::backends
