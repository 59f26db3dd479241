// kforge/agent/evaluation.hpp — glue between the task model (benchmarks/), the evaluation
// pipeline (backends/) and the run records (runs/), shared by `kforge eval` and the episode
// loop. Free functions over values; thread-safe.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/agent/run_command.hpp"
#include "kforge/agent/run_profile.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/profile_step.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

/// The runner's view of a task: its source with `profile` applied and its tolerances.
/// Throws std::invalid_argument naming the task when the profile does not exist for it.
backends::TaskRef task_ref(const Task& task, const std::string& profile);

/// True when the evaluation failed for kforge's own reasons, not the candidate's (infra_error,
/// docs/ARCHITECTURE.md "The trust boundary"): Evaluation::failure is set, by the compile (the
/// toolchain missing or broken), the judge client (the worker failed, the host failed before
/// the candidate's code ran) or the reference (it failed to load, run or agree with itself).
bool is_infrastructure_failure(const backends::Evaluation& ev);

/// For a cuda attempt that compiled (rec.backend == "cuda"): runs cuobjdump on the artifact
/// through the sandbox and records per-kernel registers, stack, static shared memory and, when
/// the build log has ptxas -v output, spill bytes in rec.profile (a missing tool is a note).
/// fill_record calls it.
void record_resources(AttemptRecord& rec, const backends::Evaluation& ev);

/// The roofline reading of a pass (benchmarks/roofline.hpp) against the device's measured
/// peaks: fractions of peak, bottleneck class and its reason in rec.profile. No peaks or no
/// time: the fields stay unknown.
void record_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks, double flops, double bytes);

/// Where the counts behind rec's roofline come from (issue 39 §1): rec.flops_source from the
/// load ("declared" formula, "estimated" by PyTorch's FLOP counter, "" none), and, when a
/// bottleneck was classed on estimated counts, its reason says so ("[estimated: ...]").
void note_counts_source(AttemptRecord& rec, const backends::LoadResult& load);

/// TritonBench's GPU efficiency (its EVAL/eval_G/2_efficiency.py: the best over the performance
/// inputs of max(GB/s / peak, TFLOPS / peak), there with an A100's constants) against the
/// measured peaks: the roofline reading (as record_roofline) of the input whose larger fraction
/// is highest; achieved_gbps and achieved_tflops are that input's. Without peaks, only those.
void record_tritonbench_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks,
                                 const std::vector<backends::PerfInputTiming>& inputs);

/// The device's measured peaks (issue 11 §1): from the peaks file (default_peaks_file(),
/// KFORGE_PEAKS_FILE) when it holds `device_name`'s, else measured once by the judge
/// (RunnerClient::measure_peaks) and cached there; nullopt when the measurement failed.
std::optional<DevicePeaks> device_peaks(backends::RunnerClient& runner, const std::string& device_name);

/// The profile step's smaller version of a task with huge inputs (backends::ScaleTaskFn): the
/// shape profiles' scaling rule (benchmarks/shapes.hpp scale_to_bytes, lines marked
/// `# profile ncu`) down to `target_bytes`; nullopt when the shapes are not understood or no
/// constant shrinks.
std::optional<backends::ScaledTask> scale_for_profile(const backends::TaskRef& task, double target_bytes);

/// Resolves `requested` (none | basic | ncu | auto) for `backend`: ncu only for cuda and where
/// ncu is found (backends::find_ncu) with the curated metric set; else basic with a note for
/// cuda ("ncu not found ...: basic profile only"); huge inputs are profiled scaled
/// (scale_for_profile). Without timing (`bench` false: eval's --no-bench; run keeps the
/// profile step, whose peaks and roofline feed its prompts) "auto" is none: the profile
/// step measures, and a check-only eval spent 88% of its slot time under ncu (H100, 14 Triton
/// exemplars); an explicit basic or ncu is kept. Throws std::invalid_argument for an unknown
/// name, std::runtime_error when the metric set cannot be read.
std::unique_ptr<ProfileStep> make_profile_step(const std::string& requested, const std::string& backend,
                                               bool bench = true);

/// The profiler part of a record: rec.profile.profiler and, for a pass (or, with step.failing,
/// an output_mismatch: the kernel ran), the profiler note; under ncu, one profiled call of the candidate and
/// of the reference (files under `dir`): the findings (backends::ncu_findings), the kernels each launched
/// with their times, profiler_ms, and a note when ncu gave no report (never a failure). Call it holding
/// `runner`'s lease. `short_of_best` (issue 21 §4): the pass does not improve its episode's best
/// speedup (this value), so it gets the basic profile (rec.profile.profiler "basic", a note
/// saying why) and no ncu run.
void record_profiler(AttemptRecord& rec, ProfileStep& step, backends::RunnerClient& runner,
                     const backends::TaskRef& ref, const backends::Evaluation& ev,
                     const std::filesystem::path& dir, std::optional<double> short_of_best = std::nullopt);

/// The bytes a call moves: the suite's formula when it has one (lr.bytes > 0), else every
/// input read once and every output written once (io_bytes).
double task_bytes(const backends::LoadResult& lr);
/// message, timings (ms), correctness and speed figures. Achieved rates use the task's
/// formulas: GB/s = bytes / t, TFLOP/s = flops / t (TritonBench appendix B). An
/// infrastructure failure (is_infrastructure_failure) is recorded as infra_error, its sub-kind
/// naming the cause (toolchain_missing, runner_failed, reference_failed, runner): kept, never
/// scored, and its text is never fed back to the model.
void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes);

/// The precision contract, detection part (docs/judge.md): inspects the compiled artifact of `ev`
/// (cuda: tensor-core instructions in its SASS, Backend::inspect_precision) and records the
/// kinds found in rec.precision; a pass whose kinds fall below the task's floating dtypes (from
/// the load's tensor specs) and are not in `allowed` gets rec.precision_disallowed (recorded as
/// a pass, its speedup not credited by default). Does nothing when the candidate did not compile.
void record_precision(AttemptRecord& rec, const backends::Evaluation& ev, const std::string& backend,
                      const backends::LoadResult& load, const std::vector<std::string>& allowed);

/// The precision contract as one backend applies it: what a prompt may truthfully say of it.
struct PrecisionContract {
  bool inspected = false;                 ///< the artifact is inspected (Backend::inspects_precision)
  bool gpu = false;                       ///< the device has reduced-precision formats such as TF32
  std::vector<std::string> run_allowed;   ///< the run's --allow-precision, the same for every task
  std::vector<std::string> task_allowed;  ///< the task's own (KernelBench convolutions: tf32)
};

/// The contract of `backend` (its name and device type) for a task: kinds its device cannot use
/// (tf32 off the GPU) are dropped from both lists.
PrecisionContract precision_contract(const std::string& backend, const std::string& device_type,
                                     const std::vector<std::string>& run_allowed, const Task& task);

/// What the prompt states about how a kernel of `task` is judged (docs/judge.md): the trials, the
/// tolerance of each output dtype (with the magnitude scaling and the constant-output rule of
/// tensor_check.cpp), and the precision contract: the run's allowance stated on every task
/// ("none" included), the task's own with its reason, detection only where it happens.
std::vector<std::string> judged_checks(const Task& task, const std::vector<backends::TensorSpec>& outputs,
                                       int trials, const PrecisionContract& precision);

/// Writes <run_dir>/unusable.json: {task id: reason} for the tasks whose reference could not be
/// loaded or judged in this invocation (summarize_run lists them in the summary and report).
void write_unusable(const std::filesystem::path& run_dir, const std::map<std::string, std::string>& unusable);

/// The kernel files of one task for `kforge eval`: DIR/<task>/<source> is sample 0 and
/// DIR/<task>/<N>/<source> (N a non-negative decimal number) is sample N, recorded with that
/// sample index as `kforge run` records its samples. `errors` names what cannot be read as a
/// sample (a folder with a kernel whose name is not a number; a top-level kernel beside a `0/`
/// folder), one line each; those files are not judged.
struct KernelSamples {
  std::vector<std::pair<int, std::filesystem::path>> samples;  ///< (sample index, file), by index
  std::vector<std::string> errors;
};
KernelSamples find_kernel_samples(const std::filesystem::path& task_dir, const std::string& source_file);

/// Exit status of `kforge eval` when some kernels could not be judged (infra_error: toolchain
/// missing, runner or reference failed), and of `kforge run` when it stopped after
/// --max-infra-failures consecutive infra_errors.
inline constexpr int kExitInfraError = 76;

/// Exit status of `kforge run` when the endpoint failed: stopped after --max-llm-failures
/// consecutive llm_errors, or ended with episodes paused at an llm_error (--resume asks again).
inline constexpr int kExitLlmError = 75;

/// The exit status of a run that finished without being stopped, from its records
/// (runs/run_status.hpp): kExitLlmError when an episode is paused at an llm_error (the count and
/// the last LLM error are written to `err`), else kExitInfraError when nothing was scored (no
/// record has a model outcome: every attempt failed in kforge, or every task is unusable; said
/// on `err`), else 0.
int finished_run_exit_status(const std::filesystem::path& run_dir, std::ostream& err);

/// Runs the command on the one scheduler `kforge run` uses (scheduler.hpp: each kernel an
/// episode with a given candidate; build -> load -> judge -> record, the attempt pipeline of
/// attempt.hpp), prints a row per kernel as it is judged (in the order judged) and a summary.
/// SIGINT/SIGTERM: no new kernel starts, the ones being compiled or judged finish and are
/// recorded, exit 130 (a second signal exits at once); the same command judges the rest.
/// Failing kernels are results (exit 0); bad arguments, a missing suite or kernels dir return
/// 2, a runner that does not start 3, and kernels that could not be judged (infra_error
/// records; a task whose reference does not load is listed once as unusable) kExitInfraError,
/// after the table and a count on stderr.
int run_eval(const EvalCommand& cmd);

/// What an eval wrote to `out` (EvalCommand::out): the last record of each task of its
/// attempts.jsonl (runs/run_dir.hpp load_attempts; none when the file is missing). Throws
/// RecordError on a malformed line, as load_attempts does.
std::map<std::string, AttemptRecord> eval_records(const std::filesystem::path& out);

}  // namespace kforge::agent
