// kforge/agent/attempt_record.hpp — what one attempt's record says about its evaluation, filled before
// its one writer (attempt.hpp write_attempt) writes it: the outcome (kforge's failures as
// infra_error), timings, roofline, profiler findings, resources and precision. Free functions
// that fill a caller-owned AttemptRecord; thread-safe for distinct records.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/agent/run_profile.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/profile_step.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

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

/// The profiler part of a record: rec.profile.profiler and, for a pass (or, with step.failing,
/// an output_mismatch: the kernel ran), the profiler note; under ncu, one profiled call of the candidate and
/// of the reference (files under `dir`): the findings (backends::ncu_findings), the kernels each launched
/// with their times, profiler_ms, and a note when ncu gave no report (never a failure). Call it holding
/// `runner`'s lease. `short_of_best` (issue 21 §4): the pass does not improve its episode's best
/// speedup (this value), so it gets the basic profile (rec.profile.profiler "basic", a note
/// saying why) and no ncu run.
/// `started`: the ncu runs start_profiler began before the bench (then used, not started again);
/// null: started here.
void record_profiler(AttemptRecord& rec, ProfileStep& step, backends::RunnerClient& runner,
                     const backends::TaskRef& ref, const backends::Evaluation& ev,
                     const std::filesystem::path& dir, std::optional<double> short_of_best = std::nullopt,
                     std::unique_ptr<backends::NcuStarted> started = nullptr);

/// The ncu runs of a candidate that passed its check, started ahead of its bench (issue 41 §4:
/// their start-up then runs beside the bench, and the profile step takes the device's timed
/// lock only for their device work; NcuProfiler::start). null when the step has no ncu, the
/// task is a test block's or the artifact is missing: record_profiler decides as before.
/// Started runs that record_profiler is not given (the bench failed) are killed with it.
std::unique_ptr<backends::NcuStarted> start_profiler(ProfileStep& step, backends::RunnerClient& runner,
                                                     const backends::TaskRef& ref,
                                                     const backends::Evaluation& ev,
                                                     const std::filesystem::path& dir);

/// The bytes a call moves: the suite's formula when it has one (lr.bytes > 0), else every
/// input read once and every output written once (io_bytes).
double task_bytes(const backends::LoadResult& lr);

/// The record of an evaluation (`ev`): outcome, sub-kind, failure, one-line message, timings (ms),
/// correctness and speed figures. Achieved rates use the task's formulas: GB/s = bytes / t, TFLOP/s = flops /
/// t (TritonBench appendix B). An infrastructure failure (is_infrastructure_failure) is recorded as
/// infra_error, its sub-kind naming the cause (toolchain_missing, runner_failed, reference_failed, runner):
/// kept, never scored, and its text is never fed back to the model.
void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes);

/// The precision contract, detection part (docs/judge.md): inspects the compiled artifact of `ev`
/// (cuda: tensor-core instructions in its SASS, Backend::inspect_precision) and records the
/// kinds found in rec.precision; a pass whose kinds fall below the task's floating dtypes (from
/// the load's tensor specs) and are not in `allowed` gets rec.precision_disallowed (recorded as
/// a pass, its speedup not credited by default). Does nothing when the candidate did not compile.
void record_precision(AttemptRecord& rec, const backends::Evaluation& ev, const std::string& backend,
                      const backends::LoadResult& load, const std::vector<std::string>& allowed);

/// The speedup a pass is credited with: 0 for a failure, a timing anomaly or disallowed
/// lower-precision math (the metrics' rule), else rec.speedup.
double credited_speedup(const AttemptRecord& rec);

}  // namespace kforge::agent
