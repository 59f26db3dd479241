// kforge/backends/tritonbench_perf.hpp — TritonBench's Speed Up, timed by the judge (issue 22 §4).
//
// TritonBench times a task with its performance script (performance_metrics/perf_{T,G}/
// golden_metrics/<name>_perf.py: a Performance_Metrics subclass whose get_input_tensors() makes
// a list of performance inputs, call_op(input) calls the task's function, get_gbps/get_tflops
// give its formulas) under triton.testing.do_bench, and scores (EVAL/eval_{T,G}/2_efficiency.py)
// Speed Up = sum of the reference's ms / sum of the candidate's ms over the inputs both ran, and
// (G) efficiency = the best over inputs of max(GB/s / peak bandwidth, TFLOPS / peak FLOP/s),
// with an A100's constants. kforge keeps the inputs, call_op and the formulas, and times each
// input with its own bench: each performance input p becomes a KernelBench-form task (the
// implementation, a minimal Performance_Metrics, the script's class, `Model.forward` = call_op
// on input p with the judge's tensors), the candidate a module of its own code with the same
// harness and `kf_forward` = call_op; the runner's `load` and `bench` time both as any task
// (lead-in, fresh inputs, verified batches, bootstrap interval), and the efficiency uses the
// judge's measured peaks.
//
// Operations that work in place (call_op returns None, or one of its inputs, or writes an input:
// G/adam_update_triton, G/attention_kernel, G/bgmv_shrink_kernel, G/context_attn_fwd, ...) would
// break the judge's rules (outputs are fresh tensors; a call never modifies its inputs, checked
// bit for bit after every call). Before timing, the judge loads input 0 of the reference in a
// detection mode (in_place_probe): its first call runs call_op on clones of the probe inputs and
// notes which tensor leaves it wrote (bits changed) or returned (storage shared). None: the task is
// timed exactly as before (no clone). Otherwise both sides' glue (`_KF_INPLACE`, written by the
// judge into both modules) clones those leaves inside each timed call and passes the clones to
// call_op; its outputs are the tensors call_op returned (a clone it wrote, or a fresh tensor)
// followed by the clones the reference writes without returning them (adam's p and exp_avg), and
// the judge verifies them against the reference's: a candidate that does not do the work returns
// unchanged clones and fails; one that writes an input not cloned is caught as before. A call_op
// that returns no tensor and writes no input leaves nothing to verify: not timed, with the reason.
// The clones' cost is in both times, said in the bench's flags ("in place: ... copying N bytes").
// Known limits: the detection runs on input 0 only (call_op is one function for every input); the
// glue runs in the candidate's process, so a candidate that patched torch's clone to skip the copy
// of a buffer call_op only writes would save that copy (its outputs are still verified, and a
// skipped clone of a buffer that is read, or none at all, fails or writes the judge's inputs).
// Stateless functions; bench_tritonbench() uses the RunnerClient it is given (one owner).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kforge/backends/runner_client.hpp"

namespace kforge::backends {

/// The performance script with what only works in TritonBench's tree taken out: the
/// `sys.path.append(...)` lines, the imports of the task's module and of performance_utils
/// (the harness defines its Performance_Metrics; the task's names are the module's own), and
/// the `if __name__ == "__main__":` block.
std::string perf_script_body(const std::string& perf_script);

/// The names the script imports from the task's module (`from TritonBench_v1.<m> import a, b`).
std::vector<std::string> perf_script_imports(const std::string& perf_script);

/// Which tensor leaves of a performance input the harness clones before call_op (the header's
/// "in place"): none (call_op on the judge's tensors, as before), `cloned` (those the reference
/// writes or returns; the outputs are then the tensors call_op returns followed by the clones at
/// `kept`, those it writes without returning them), all (every leaf cloned and kept), nothing
/// (call_op returns no tensor and writes none: nothing to verify, not timed), or detect (the
/// reference only: its first call decides, in_place_probe).
struct InPlace {
  enum class Kind { none, detect, leaves, all, nothing };
  Kind kind = Kind::none;
  std::vector<int> cloned, kept;  ///< Kind::leaves: 0-based, in get_inputs() order
  std::string python() const;     ///< the `_KF_INPLACE` literal both modules get
  /// From the probe's verdict (`_kf_inplace_code(0)`, `(1)`: one bit per leaf; 0 none, -2
  /// nothing, other negatives all).
  static InPlace from_code(double cloned_code, double kept_code);
};

/// `source` (the implementation, or a candidate's module) followed by the harness for
/// performance input `input` (0-based): kf_forward(*tensors) = call_op of the input with its
/// tensor leaves replaced by `tensors`, in order (those `in_place` names cloned first). With
/// `reference`, also the KernelBench form (Model, get_inputs(): the input's tensor leaves, made
/// afresh under the judge's seed, and _kf_formula for the bytes and FLOPs of one call).
std::string perf_module(const std::string& source, const std::string& perf_script, int input, bool reference,
                        const InPlace& in_place = {});

/// The KernelBench-form task of performance input `input` of a TritonBench task (its
/// perf_script must be set): id "<id>#perf<input>", the bytes and FLOPs of one call from the
/// script's formulas (bytes < 0: no such input).
TaskRef perf_task(const TaskRef& task, int input, const InPlace& in_place = {});

/// The reference's detection task: input 0 in InPlace::Kind::detect, its load's `bytes` and
/// `flops` the verdict for InPlace::from_code (the load's own reference call decides, in the judge).
TaskRef in_place_probe(const TaskRef& task);

/// Speed Up as TritonBench scores it: sum of reference ms / sum of candidate ms; with a 95%
/// percentile-bootstrap interval (each input's batches resampled, medians summed; Efron 1979).
/// {0, 0, 0} when there is no input.
struct SumRatio {
  double speedup = 0, ci_low = 0, ci_high = 0;
};
SumRatio tritonbench_speedup(const std::vector<PerfInputTiming>& inputs);

/// Which of `n` performance inputs to time when only `k` are: spread evenly, the first and the
/// last included (k = 1: the last, the largest in TritonBench's scripts); k <= 0 or k >= n: all.
std::vector<int> chosen_inputs(int n, int k);

/// Times the candidate (`artifact`, already checked) and the reference on every performance
/// input of `task` (at most `max_inputs`), each through RunnerClient::bench, in place when
/// in_place_probe's load finds call_op works in place; derived modules go to `workdir`. The result aggregates
/// (candidate_ms, reference_ms: the sums; speedup and its interval: tritonbench_speedup) and lists each input
/// in `perf_inputs`. As in TritonBench, an input the candidate fails on (a crash, a wrong verified batch,
/// PyTorch compute outside the task's allow_ops: the script's call_op may do its own, and a G task's gold ops
/// allowed in its check are not carried over) is left out, with a note in flags: the verdict is the test
/// block's, never changed by the timing. A task whose harness cannot run (the reference fails
/// on input 0, a name the candidate does not define) is not timed: ok with no inputs and a note;
/// so is an input whose reference fails when the bench loads it again (reference_unusable: on the
/// GPU, a CUDA error of the gold's that surfaced after its first load). Only the judge's own
/// failure (any other infra_error) is returned as a failure.
BenchResult bench_tritonbench(RunnerClient& runner, const TaskRef& task, const std::string& candidate_source,
                              const std::filesystem::path& workdir, const BenchOptions& opt,
                              int max_inputs = 64);

}  // namespace kforge::backends
