// kforge/backends/runner_protocol.hpp — the judge's wire protocol, typed: every command
// kforge-runner takes and every reply it gives, each a struct with its JSON mapping (encode()
// and decode_request() / decode_reply<R>(), runner_protocol.cpp). Both ends use it: the runner
// (backends/judge/runner_main.cpp) decodes requests and encodes replies, the client
// (runner_client.cpp) encodes requests and decodes replies. The command names and the field
// names live here and nowhere else.
//
// The wire: one JSON object per line each way. The runner first prints the ready line
// ({"ok":true,"ready":true}). A request is {"cmd": <Command name>, "id"?, "timed_lock_held"?,
// "timed_lock_shared"?, <its fields>}; its reply echoes "id" and is {"ok":true, <fields>} or an
// ErrorReply {"ok":false,"error":<JudgeError name>,"message"}. What each command does and what
// each field means is documented at its struct below (and in docs/judge.md).
//
// A message that does not fit its type (not an object, a missing required field, a field of the
// wrong type, an unknown command or error name) is never an exception: decoding returns a
// Failure{FailureKind::judge, "judge_protocol"} whose message names the command and the field.
// The runner answers a bad request with ErrorReply{JudgeError::protocol} carrying that message;
// the client records a bad reply as infra_error/judge_protocol. Optional fields take the
// defaults written at their members when absent.
//
// The typed failure (issue 38) travels in ErrorReply::error: the runner decides what failed
// (JudgeError), the client maps it to a Failure with judge_failure(), once.
//
// Values only; no state, no I/O; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "kforge/backends/host_kind.hpp"
#include "kforge/common/failure.hpp"
#include "kforge/common/outcome.hpp"

namespace kforge::backends {

/// What an error reply says failed, a closed set decided by the runner:
/// - python_exception: Python raised in the judge (message: the traceback);
/// - runner: a C++ exception in the judge;
/// - protocol: the request did not fit its type (message: the command and the field);
/// - reference_failed: the task's reference raised or failed (a test block's gold: its traceback);
/// - unjudgeable: the reference ran but cannot judge (its own runs disagree, or a test block
///   cannot tell a stub from the gold); the message says why, for people.
enum class JudgeError { python_exception, runner, protocol, reference_failed, unjudgeable };

/// The wire name of a JudgeError ("python_exception", ...).
std::string_view to_string(JudgeError e);
/// Parses a reply's "error" field; std::nullopt for a value outside JudgeError.
std::optional<JudgeError> judge_error_from_string(std::string_view s);

/// Whose machinery an error reply says failed, and the sub-kind recorded for it: reference_failed
/// is FailureKind::reference "reference_failed", unjudgeable FailureKind::reference
/// "unjudgeable", every other error FailureKind::judge under its own name. The one place a judge
/// reply's failure is typed.
Failure judge_failure(JudgeError error, const std::string& text);

namespace protocol {

/// Every command, in the order of Request::Body's alternatives.
enum class Command {
  hello,
  load,
  reference,
  check,
  bench,
  peaks,
  prewarm,
  profile_setup,
  testblock,
  triton_bench,
  quit
};

/// The wire name of a command ("hello", "load", ...).
std::string_view to_string(Command c);
/// Parses a request's "cmd"; std::nullopt for an unknown name.
std::optional<Command> command_from_string(std::string_view s);

/// dtype name ("float32", ..., or "*") -> (atol, rtol); wire: {dtype: [atol, rtol]}.
using Tolerances = std::map<std::string, std::pair<double, double>>;

/// The candidate a check, test block, bench or profile request names.
struct Candidate {
  std::string artifact;  ///< absolute path of the built artifact ("artifact")
  /// The host its backend needs ("host": "native" = kforge-host, "python" = the Triton host); a
  /// request without it (an older client) gets the host the artifact's name implies.
  HostKind host = HostKind::native;
  std::string allow_ops;  ///< (triton) ATen ops allowed besides allocation, comma-separated; "" none
};

/// {"cmd":"hello"}: versions and devices (HelloReply).
struct HelloRequest {};

/// {"cmd":"load"}: builds the task's reference (or selects it when held: LoadReply::cached);
/// check and bench use the task of the last successful load.
struct LoadRequest {
  std::string task;             ///< the task id (required)
  std::string file = "<task>";  ///< the path named in tracebacks
  std::string source;           ///< the task's Python source, its profile applied (required)
  std::string device = "cpu";
  int64_t model_seed = 42;
  std::string flops, bytes;  ///< the suite's formulas over the module's constants ("" none)
  /// "train" or "eval"; the client also appends `__kforge_module_mode__ = "<mode>"` to the source.
  std::string module_mode;
  int64_t probe_seed = 7;  ///< the input set of the probe run that finds the outputs' specs
  /// The profile step's reference call (runner --profile-reference): its input seed.
  std::optional<int64_t> profile_seed;
};

/// {"cmd":"reference"}: runs the reference alone (ReferenceReply).
struct ReferenceRequest {
  int trials = 5;
  int64_t seed = 1000;
};

/// {"cmd":"check"}: the candidate on `trials` fresh input sets (seeds seed, seed+1, ...), in a
/// fresh confined host; the candidate only ever sees copies of the inputs (CheckReply).
struct CheckRequest {
  Candidate candidate;
  int trials = 5;
  int64_t seed = 1000;
  int64_t deadline_ms = 50'000;  ///< the judge's own deadline, inside the client's timeout
  Tolerances tolerances;
  bool perturb_parameters = true;  ///< a trial with the float parameters perturbed
  bool wide_inputs = true;         ///< a trial with scaled-normal inputs
};

/// {"cmd":"bench"}: times the candidate (when given) and the reference (BenchReply).
struct BenchRequest {
  std::optional<Candidate> candidate;  ///< none: the reference alone
  int reps = 100, min_reps = 10, warmup = 5;
  double budget_ms = 5000;
  int64_t seed = 2000;
  int64_t deadline_ms = 150'000;
  bool compile_baseline = false;  ///< wire "baseline": "compile" (also time torch.compile) or "eager"
  std::optional<double> peak_bytes_per_s;  ///< the speed-of-light bound's bandwidth; none: measured
  bool reference_before = true;            ///< also time the reference before the candidate
  Tolerances tolerances;                   ///< for the verified batches
};

/// {"cmd":"peaks"}: the device's measured peaks (PeaksReply).
struct PeaksRequest {
  std::string device;  ///< "" = the runner's current device
};

/// {"cmd":"prewarm"}: starts the candidate host of that kind before the first check, not waited
/// for (the Triton zygote; PrewarmReply).
struct PrewarmRequest {
  HostKind host = HostKind::native;  ///< required
  std::string device;                ///< "" = the runner's current device
};

/// {"cmd":"profile_setup"}: writes dir/profile_tensors.bin and dir/profile_reference.json for the
/// current task and names the two processes to run under Nsight Compute (ProfileSetupReply).
struct ProfileSetupRequest {
  Candidate candidate;
  std::string dir;  ///< required
  int64_t seed = 3000;
};

/// {"cmd":"testblock"}: a TritonBench test block, over the gold in the judge and over the
/// candidate in its host, under `trials` seeds; no load precedes it (CheckReply).
struct TestblockRequest {
  Candidate candidate;
  int trials = 3;
  int64_t seed = 0;
  int64_t deadline_ms = 50'000;  ///< the candidate's part, counted from the end of the reference's
  /// The reference's part (the gold's runs under every seed): past it the runner interrupts the
  /// gold and answers reference_failed, "did not finish within" (the task's, never the model's).
  int64_t reference_deadline_ms = 240'000;
  Tolerances tolerances;
  std::string source, test_source;  ///< the implementation and its test block (required)
  std::string test_function;
  std::vector<std::string> entries;  ///< the entry points the candidate must define
  std::string device;                ///< "" = the runner's current device
};

/// {"cmd":"triton_bench"}: the reference timed by triton.testing.do_bench (TritonBenchReply).
struct TritonBenchRequest {
  int64_t seed = 2000;
};

/// {"cmd":"quit"}: the runner exits; no reply.
struct QuitRequest {};

/// One request: the envelope and the command's own fields.
struct Request {
  using Body =
      std::variant<HelloRequest, LoadRequest, ReferenceRequest, CheckRequest, BenchRequest, PeaksRequest,
                   PrewarmRequest, ProfileSetupRequest, TestblockRequest, TritonBenchRequest, QuitRequest>;
  Request() = default;
  /// A request of one command: Request(CheckRequest{...}).
  template <class C, class = std::enable_if_t<std::is_constructible_v<Body, C&&>>>
  Request(C&& command) : body(std::forward<C>(command)) {}  // NOLINT: implicit by design
  Body body;
  std::string id;  ///< echoed by the reply; "" = none
  /// The client holds the device's timed lock (timed_lock.hpp) for the whole request, exclusive
  /// (timed work: the judge takes none itself) or shared (untimed work: a check, a load).
  bool timed_lock_held = false, timed_lock_shared = false;
  Command command() const { return static_cast<Command>(body.index()); }
};

/// The request as its JSON line's object.
nlohmann::json encode(const Request& r);
/// The request a JSON object stands for, or judge_protocol naming the command and the field.
Expected<Request> decode_request(const nlohmann::json& j);

// ---- Replies -------------------------------------------------------------------------------

/// {"ok":false,"error","message"}: the runner could not do what was asked.
struct ErrorReply {
  JudgeError error = JudgeError::runner;
  std::string message;
};

/// A tensor of the task: name, kind (input | parameter | buffer | output), dtype, shape.
struct TensorSpec {
  std::string name, kind, dtype;
  std::vector<int64_t> shape;
};

/// One GPU as hello reports it.
struct DeviceInfo {
  int index = 0;
  std::string name, cc;  ///< cc: "9.0"
  int64_t memory_bytes = 0;
  std::string timed_lock;  ///< its timed lock's name ("cuda-<PCI bus id>")
};

/// hello: the judge's versions and devices.
struct HelloReply {
  std::string libtorch, torch, python;
  std::optional<std::string> triton;  ///< none: Triton does not import
  bool runner_cuda = false;           ///< the runner was built with CUDA
  /// Whether PyTorch lets the reference use TF32 for fp32 matmuls and cuDNN convolutions.
  bool reference_tf32_matmul = false, reference_tf32_cudnn = false;
  bool cuda_available = false;
  std::vector<DeviceInfo> devices;
  std::string torch_cuda;  ///< PyTorch's CUDA version ("" without CUDA)
  std::string timed_lock_dir;
  std::string timed_lock_unavailable;  ///< why the timed lock cannot be used; "" = it can
};

/// load: the task's tensors and its costs.
struct LoadReply {
  std::vector<TensorSpec> inputs, outputs;
  int64_t input_bytes = 0;
  double flops = 0, bytes = 0;  ///< per call, from the task's formulas (0: none given)
  /// Where `flops` comes from: "declared" (the task's formula), "estimated" (PyTorch's FLOP
  /// counter over one reference call, in the runner at load), "" (none counted); `bytes`:
  /// "declared", or "estimated" when no formula was given (the caller's inputs + outputs bytes).
  std::string flops_source, bytes_source;
  double load_ms = 0;
  bool cached = false;  ///< the worker still held the task: selected, not rebuilt
  int tasks_held = 0;   ///< tasks the worker holds loaded after this one
};

/// reference: each run's wall time (ms).
struct ReferenceReply {
  std::vector<double> ms;
};

/// check and testblock: the verdict on the candidate, and the error figures (runner Comparison,
/// on passes too, max over trials and outputs): max_abs_err = max |a - e|; max_rel_err =
/// max |a - e| / (|e| + atol); tolerance_ratio = max |a - e| / (atol_eff + rtol |e|) (<= 1 within
/// tolerance), atol_eff = min(atol, 0.01 rms(e)). Integer and bool outputs compare exactly.
/// A figure that is NaN or infinite travels as null and decodes as infinity.
struct CheckReply {
  Outcome outcome = Outcome::runtime_error;  ///< required
  std::string sub_kind;
  std::string message;
  int trials = 0, trials_passed = 0;
  double max_abs_err = 0, max_rel_err = 0, mismatch_fraction = 0;
  double tolerance_ratio = 0;  ///< 0 = not reported
  /// An output_mismatch's worst element: its index (one per dimension; empty: none), and the
  /// expected and actual values there (NaN travels as null and decodes as NaN).
  std::vector<int64_t> worst_index;
  double expected = 0, actual = 0;
  double check_ms = 0;
  std::map<std::string, double> phases_ms;  ///< where the judge's check time went (wire "phases")
  std::vector<std::string> checks;          ///< what the check ran, one line each
  /// A torch_fallback's outputs, still compared: whether they matched the reference on every
  /// trial; nullopt when not compared (other outcomes: the outcome says).
  std::optional<bool> correct;
  std::string correct_message;  ///< why they did not
  int gold_runs = 0;            ///< a test block's pass: the gold's runs per seed (0: not said)
  /// The failing trial of an output_mismatch (wire "trial"): index (1-based) of `of`, kind
  /// ("standard", "parameters perturbed", "wider inputs"), seed, input scale; index 0: none.
  struct Trial {
    int index = 0, of = 0;
    std::string kind;
    int64_t seed = 0;
    double input_scale = 0;
  } trial;
};

/// Statistics over a bench's batches (one sample per batch of `sets` calls, the judge's clock).
struct TimingStats {
  double median_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, min_ms = 0, cv = 0;
  int reps = 0;     ///< calls
  int batches = 0;  ///< samples
};

/// bench: the timings, or the candidate's failure while timed (outcome not pass: outcome,
/// sub_kind and message alone travel; e.g. output_mismatch/bench_only, wrong on a verified timed
/// repetition). Times are ms per call, medians over the judge's batches (one sample per batch
/// of `sets` calls, timed by the judge's clock).
struct BenchReply {
  Outcome outcome = Outcome::runtime_error;  ///< pass: timed
  std::string sub_kind, message;
  bool timed_candidate = false;  ///< wire "candidate" present: the candidate was timed
  TimingStats candidate, reference;
  std::optional<TimingStats> reference_compile;  ///< torch.compile(model), when asked for
  std::optional<TimingStats> reference_before;   ///< the reference timed before the candidate
  double candidate_ms = 0;                       ///< the candidate's time used for speedup (see flags)
  double reference_ms = 0;
  double reference_before_ms = 0;  ///< the reference's median timed before the candidate (0: not)
  double speedup = 0;              ///< reference_ms / candidate_ms
  double speedup_ci_low = 0, speedup_ci_high = 0;  ///< 95% percentile-bootstrap interval (wire "speedup_ci")
  int sets = 0;                                    ///< input/output sets the timed calls rotated through
  int sets_per_window = 0;   ///< of them, run in one timed window (the Triton host: at most 16)
  int verified_batches = 0;  ///< batches whose secret set was verified
  /// What the judge subtracts from each timed batch without a lead-in (ms): a timed window around
  /// a run of no sets, measured before the candidate was loaded.
  double round_trip_ms = 0;
  /// The Triton host's own account of a timed request, medians over requests: first_call_ms,
  /// calls_ms, sync_ms (ms) and slots_taken (a count: allocations handed a set's output, so
  /// written in place). The candidate's process's word: diagnostics only, never used (wire
  /// "host_reported").
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
  /// honest spins come to the 10 us threshold); the lead-in's length (ms) (calibration.cpp, lead_in.hpp).
  double lead_in_ms = 0;
  double gpu_base_ms = 0;
  int lead_in_preempted = 0;
  double lead_in_max_gap_us = 0;
  double lead_in_length_ms = 0;
  std::map<std::string, double> phases_ms;  ///< where the judge's bench time went (wire "phases")
  /// The judge's bound: the outputs' bytes at the device's measured peak bandwidth (ms per
  /// call; 0 = no bound: outputs that fit in the cache, or no measurement).
  double speed_of_light_ms = 0;
  double peak_bytes_per_s = 0;  ///< the bandwidth the bound used (measured, or the request's)
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
  /// batch CV is above 0.2 (timing_rule.hpp unstable_reason; docs/judge.md "Timing and peaks").
  std::string timing_unstable;
  std::vector<std::string> flags;
  double bench_ms = 0;  ///< the judge's wall time for the bench
  /// The judge's per-batch times, ms per call (wire candidate/reference "samples_ms"), for
  /// intervals over several benches.
  std::vector<double> candidate_samples, reference_samples;
};

/// peaks: the device's peaks as the judge measured them.
struct PeaksReply {
  std::string device;
  double dram_bytes_per_s = 0;  ///< best of fills (bytes written / s) and copies ((read + written) / s)
  double flops_per_s = 0;       ///< FP32 matmul, 2 n^3 / time, TF32 off
  std::string method;           ///< sizes and repetitions, free text
};

/// prewarm: whether a host was started.
struct PrewarmReply {
  bool started = false;
};

/// profile_setup: the two command lines of the profile step (profile.hpp): the candidate host's
/// profile mode on the artifact and the runner's reference-call mode.
struct ProfileSetupReply {
  std::vector<std::string> candidate, reference;
};

/// triton_bench: the reference's median (ms) by triton.testing.do_bench.
struct TritonBenchReply {
  double ms = 0;
};

/// {"ok":true, ...} for each reply; {"ok":false, ...} for an ErrorReply.
nlohmann::json encode(const ErrorReply& r);
nlohmann::json encode(const HelloReply& r);
nlohmann::json encode(const LoadReply& r);
nlohmann::json encode(const ReferenceReply& r);
nlohmann::json encode(const CheckReply& r);
nlohmann::json encode(const BenchReply& r);
nlohmann::json encode(const PeaksReply& r);
nlohmann::json encode(const PrewarmReply& r);
nlohmann::json encode(const ProfileSetupReply& r);
nlohmann::json encode(const TritonBenchReply& r);

/// A reply of type R (any of the above but ErrorReply): R, or the failure the reply reports
/// ({"ok":false}: judge_failure() of its error; an unknown error name is judge_protocol naming
/// the field), or judge_protocol naming the reply and the field that does not fit R.
template <class R>
Expected<R> decode_reply(const nlohmann::json& j);

/// The ErrorReply a reply is ({"ok":false} with a known "error"); std::nullopt for any other.
std::optional<ErrorReply> error_reply(const nlohmann::json& j);

/// The runner's first line, {"ok":true,"ready":true}, and whether a line is it.
nlohmann::json ready_line();
bool is_ready_line(const nlohmann::json& j);

}  // namespace protocol
}  // namespace kforge::backends
