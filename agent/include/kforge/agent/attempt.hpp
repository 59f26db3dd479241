// kforge/agent/attempt.hpp — the one attempt pipeline (issue 20 §1): source -> build -> check
// -> bench -> profile -> record, shared by `kforge eval`, `kforge run` and anything later.
//
// Stages are free functions over values; the caller decides where each runs (the scheduler runs
// build on a compile slot and judge on a judge slot, eval runs them in order). `AttemptSetup` is
// the run's read-only configuration (shared by every attempt, safe to read from many threads;
// its ProfileStep is used under a runner's lease only). `TaskJudging` is one task as the judge
// sees it. A TritonBench task (TaskRef::test_block()) loads no model: its test block is the
// check, in the judge and in the candidate's confined host. `write_attempt` is the one writer of
// an attempt's files and its line in attempts.jsonl.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/agent/reference_times.hpp"
#include "kforge/agent/run_profile.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/failure.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge {
class RunDir;
}

namespace kforge::agent {

/// The run's judging configuration: read-only once built.
struct AttemptSetup {
  const backends::Backend* backend = nullptr;
  std::string backend_name;
  backends::EvalOptions opt;
  ProfileStep* profile = nullptr;  ///< shared by the run; used only under a runner's lease
  std::optional<DevicePeaks> peaks;
  std::vector<std::string> allow_precision;  ///< the run's --allow-precision
  /// The run's stable reference times per task (the prompt's estimate of the reference); null =
  /// none kept. The object is thread-safe; the pointer is set once with the setup.
  std::shared_ptr<ReferenceTimes> reference_times;
};

/// One task as the judge sees it: its reference and what loading it told (shapes, formulas).
struct TaskJudging {
  const Task* task = nullptr;
  backends::TaskRef ref;
  backends::LoadResult load;  ///< ok for a test-block task without loading anything
  /// Appended to every candidate module before its build (module_suffix_for): an operator
  /// task's adapter (its kf_forward over every case) on a Python backend; "" otherwise.
  std::string module_suffix;
};

/// The judging flags `kforge run` and `kforge eval` share (each command's options of the same
/// names: run_options.cpp).
struct JudgingFlags {
  int trials = 5;
  bool bench = true;
  int reps = 100;
  int perf_inputs = 0;
  std::string baseline = "eager";
  std::vector<std::string> allow_precision;
};

/// Fills what every attempt of a run or an eval shares: the backend, the profile step, a fresh
/// ReferenceTimes and the evaluation options from `flags` (the compile cache: the default one).
/// The device's peaks are the caller's (each finds its device's name its own way).
void set_judging(AttemptSetup& a, const backends::Backend* backend, const std::string& backend_name,
                 ProfileStep* profile, const JudgingFlags& flags);

/// What to append to a candidate's module for `task` under `setup`'s backend: for an
/// aten_operator task on a backend whose artifact is a Python module, operator_adapter (the
/// candidate defines `<op>_kernel_impl`; kforge's kf_forward calls it on every case); else "".
std::string module_suffix_for(const AttemptSetup& setup, const Task& task);

/// Loads `ref` in `runner` (kept warm there); a test-block task loads nothing and is ok.
Expected<backends::LoadResult> load_task(backends::RunnerClient& runner, const backends::TaskRef& ref);

/// The one-line reason a task is unusable, from a failed load (LoadResult's failure): the
/// judge's first line when it found the reference unjudgeable (sub_kind "unjudgeable", typed by
/// the runner: its outputs are random), else "the reference did not load: <the error's
/// headline>" (a traceback's exception line: backends::failure_headline; the whole text belongs
/// in the attempt directory).
std::string unusable_reason(const Failure& load_failure);

/// The task's TaskRef for `profile` with the run's extra --allow-ops. Throws
/// std::invalid_argument when the task has no such profile.
backends::TaskRef task_ref_for(const Task& task, const std::string& profile,
                               const std::vector<std::string>& allow_ops);

/// A fresh record for (task, sample, turn): coordinates, backend, attempt directory, start time.
AttemptRecord new_record(const Task& task, const std::string& backend, int sample, int turn);

/// The build stage: compiles `source` in `workdir` (sandboxed, compile cache). Needs no runner.
backends::Evaluation build_candidate(const AttemptSetup& setup, const std::string& source,
                                     const std::filesystem::path& workdir);

/// What the judge decided about one attempt: its record (judge fields filled) and the text the
/// model sees as feedback (detail) and the build log.
struct Judged {
  AttemptRecord rec;
  std::string detail;     ///< feedback: compile summary, mismatch summary, error figures of a pass
  std::string message;    ///< the evaluation's full message (result.json)
  std::string build_log;  ///< the compiler's output ("" when none)
  /// TritonBench: each timed performance input, [{input, candidate_ms, reference_ms, bytes,
  /// flops}] (ms per call; bytes and FLOP of one call by the script's formulas); result.json's
  /// "perf_inputs". Empty for other tasks.
  nlohmann::json perf_inputs = nlohmann::json::array();
};

/// Which passes get the profile step's deep (ncu) profile (issue 21 §4). `kforge run` profiles
/// a pass only when it improves its episode's best speedup (other passes get the basic
/// profile); --profile-every-pass, and `kforge eval` (one attempt per task), profile every pass.
struct DeepProfile {
  bool every_pass = true;
  std::optional<double> best;  ///< the best speedup of an earlier pass of the episode (none: no pass yet)
  /// Any pass gets the ncu profile, whatever its speedup: under every_pass, or with no earlier pass.
  bool any_pass() const { return every_pass || !best; }
};

/// True unless `rec` is a pass that does not improve the episode's best: under every_pass, or
/// with no earlier pass, any pass qualifies; else a pass whose speedup (0 when not credited:
/// credited_speedup) is above `p.best`. An attempt that did not pass is left to the profile
/// step's own rule (ProfileStep::failing).
bool wants_deep_profile(const AttemptRecord& rec, const DeepProfile& p);

/// The judge stage: for a compiled candidate, check, bench and profile in `runner` (the caller
/// holds its slot) and fill `rec`; for one that did not compile, settles the record without a
/// runner (runner may be null then). Roofline and the precision contract are recorded too. The
/// ncu profile runs only where wants_deep_profile(rec, deep); other passes get the basic one.
Judged judge_candidate(const AttemptSetup& setup, backends::RunnerClient* runner, const TaskJudging& task,
                       backends::Evaluation ev, AttemptRecord rec, const std::filesystem::path& workdir,
                       const DeepProfile& deep = {});

/// The one failure type for a judged evaluation: a Failure (toolchain, judge, reference) when
/// the record is an infra_error, nullopt when the verdict is the candidate's.
std::optional<Failure> failure_of(const AttemptRecord& rec);

/// An attempt's files (name -> text) and its result.json, written by write_attempt.
struct AttemptFiles {
  std::map<std::string, std::string> files;
  nlohmann::json result;
};

/// The one writer of an attempt: its files (atomically), result.json, then its record appended
/// to attempts.jsonl (fsynced). Thread-safe as RunDir is.
void write_attempt(RunDir& run, const AttemptRecord& rec, const AttemptFiles& files);

/// The prompt's view of a task: reference (or, for TritonBench, its instruction and the
/// function(s) to define), tensors, judged checks, tolerances. History and exemplars are left
/// for the caller.
prompts::PromptInput prompt_input(const AttemptSetup& setup, const TaskJudging& task, int trials,
                                  const std::string& device, const prompts::HardwareFacts& hardware);

/// The entry point an LLM reply's code block must define: kf_forward, for a TritonBench task its
/// function (the first entry the implementation defines as a function), for an operator task
/// with a module suffix `<op>_kernel_impl`.
std::string entry_point(const TaskJudging& task);

/// The candidate in an LLM reply: Backend::extract for kf_forward; for a TritonBench task's
/// function (Python), the last fenced block of the backend's languages that defines it at its
/// top level. Never throws.
backends::Extracted extract_candidate(const backends::Backend& backend, const std::string& reply,
                                      const std::string& entry);

/// TritonBench's names (its paper, section 4) over judged attempts of test-block tasks, each
/// twice (issue 22 §3): "correct", as TritonBench counts, any code — Call accuracy (the test
/// block ran to its results: pass, output_mismatch or torch_fallback) and Execution accuracy
/// (the outputs match: AttemptRecord::correct) — and "pass", kforge's stricter figure,
/// Triton-native only — Call accuracy without torch_fallback, Execution accuracy = pass.
/// Attempts that are not model outcomes are not counted.
struct TritonBenchTally {
  int judged = 0;
  int calls = 0, correct = 0;        ///< any code
  int native_calls = 0, passes = 0;  ///< no torch_fallback
  /// Speed Up (issue 22 §4): passes with a credited speedup (TritonBench's sum-of-times ratio
  /// over the task's performance inputs), their sum, and the sum of their GPU efficiency (the
  /// best input's larger fraction of the measured peaks, bandwidth or FLOP/s).
  int timed = 0;
  double speedup_sum = 0, efficiency_sum = 0;
  bool interpreter = false;  ///< the judge's device is the CPU: times are Triton's interpreter's
  void add(const AttemptRecord& rec, bool test_block);
  /// "TritonBench: Call accuracy a% correct / b% pass, Execution accuracy c% correct / d% pass
  /// (...)" and, when passes were timed, TritonBench's Speed Up (mean over tasks, as its
  /// 2_efficiency.py) and efficiency; "" when nothing was judged.
  std::string line() const;
};

}  // namespace kforge::agent
