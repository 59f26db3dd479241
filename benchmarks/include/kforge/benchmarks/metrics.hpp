// kforge/benchmarks/metrics.hpp — scoring a run's attempts (docs/reports.md).
//
// summarize() turns the AttemptRecords of a run into a Summary: pass@k and compile@k (the
// unbiased estimator of Chen et al. 2021, as KernelBench uses), the repair curve (pass@k at
// every turn t, counting a sample as passed when any of its attempts at turns <= t passed),
// final-attempt and best-attempt scoring, fast_p (KernelBench), SpeedUp_α@k (MultiKernelBench),
// the geometric-mean speedup, the outcome histogram, token/cost totals and phase times — for the
// whole run and cut by category, difficulty, backend and model.
//
// Units of scoring:
//   problem  — (backend, model, task): a task attempted with one backend by one model. Every
//              "fraction of tasks" and every per-task average is over problems; a run with one
//              backend and one model has one problem per task. Only problems that have at least
//              one attempt are known; tasks never attempted are not counted.
//   episode  — (problem, sample): its attempts ordered by turn. n = the problem's samples.
//   Duplicate records of one (problem, sample, turn) keep the last one (with a warning, except
//   where the earlier one is an llm_error that `--resume` asked again).
// llm_error records (the endpoint failed; no model output) and infra_error records (kforge's
// toolchain, judge or reference failed) are not model attempts: they appear in the outcome
// histogram, token/time totals and AttemptStats::llm_errors / infra_errors, and nowhere else.
// pass@k for a k is the mean of pass_at_k(n, c, k) over problems with n >= k; a k that no
// problem reaches is left out of the map. Speedups count only for passing attempts with a
// measured, finite, positive speedup; "best" means the passing attempt of highest speedup.
// Where some problem is correct but no passing attempt of the scored set was timed (a
// `--no-bench` run), fast_p for p > 0 and SpeedUp_α@k are unknown, and left out of their maps
// (reports print "–"), rather than read as 0.
//
// Values only; functions are pure and thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kforge/runs/attempt.hpp"

namespace kforge {

/// Unbiased pass@k estimator: 1 - C(n-c, k) / C(n, k), computed as the stable product
/// 1 - prod_{i=n-c+1..n} (1 - k/i). Returns 1 when n - c < k (every k-subset holds a success).
/// Throws std::invalid_argument when k < 1, n < 1, c < 0, k > n or c > n.
double pass_at_k(int n, int c, int k);

/// Which k, p and α the tables use.
struct MetricsConfig {
  /// pass@k, compile@k, SpeedUp_α@k; empty (the default) = every k from 1 to the largest
  /// number of samples of a problem (Summary::config then lists them).
  std::vector<int> ks{};
  std::vector<double> fast_ps{0, 1, 1.5, 2};  ///< fast_p thresholds (speedup > p; fast_0 = correct)
  std::vector<double> alphas{1, 1.5, 2};      ///< SpeedUp_α@k thresholds (speedup >= α)
};

/// Scores of a set of problems under one rule for which attempts count (best over turns <= t,
/// or the final attempt of each episode).
struct Scores {
  int tasks = 0;                       ///< problems scored
  int episodes = 0;                    ///< samples over those problems
  int correct_tasks = 0;               ///< problems with at least one passing sample
  std::map<int, double> compile_at_k;  ///< k -> compile@k (a sample compiled)
  std::map<int, double> pass_at_k;     ///< k -> pass@k
  std::map<double, double> fast_p;     ///< p -> fraction of problems correct with speedup > p
  /// A problem is correct but no passing attempt was timed: fast_p (p > 0), fast_p_confident
  /// (p > 0) and speedup_at_k are unknown and left empty.
  bool untimed = false;
  /// p -> fraction of problems correct with a speedup whose 95% interval lies above p (its low
  /// end > p; attempts without a recorded interval never count): fast_p that noise cannot make.
  std::map<double, double> fast_p_confident;
  /// α -> k -> SpeedUp_α@k: the pass@k estimator with c = samples reaching speedup >= α.
  std::map<double, std::map<int, double>> speedup_at_k;
  double geomean_speedup = 0;  ///< over problems with a measured speedup, each its best; 0 = none
  int speedup_tasks = 0;       ///< problems in geomean_speedup
};

/// Time spent in one phase, over the attempts where it ran (time > 0).
struct PhaseTime {
  double sum_ms = 0;
  int count = 0;  ///< attempts where the phase ran
  double mean_ms() const { return count ? sum_ms / count : 0; }
};

/// Per-attempt counts: outcomes, rates, usage.
struct AttemptStats {
  int attempts = 0;      ///< model attempts (every outcome but llm_error)
  int llm_errors = 0;    ///< llm_error records, not in `attempts`
  int infra_errors = 0;  ///< infra_error records (could not be judged), not in `attempts`
  int compiled = 0;      ///< outcome not in {format_error, compile_error, forbidden_api}
  int ran = 0;           ///< compiled and ran to completion: output_mismatch, torch_fallback or pass
  int ran_native = 0;    ///< ran without torch_fallback: output_mismatch or pass
  int correct = 0;       ///< outputs matched, any code: pass, or torch_fallback found correct (issue 22 §3)
  int passed = 0;
  int compile_cached = 0;
  /// outcome name -> sub-kind ("" when none) -> count.
  std::map<std::string, std::map<std::string, int>> outcomes;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double cost_usd = 0;
  PhaseTime llm, compile, check, bench, total;
  /// TritonBench's names, twice (issue 22 §3): call accuracy = compiled-and-ran rate, execution
  /// accuracy = correct rate, as TritonBench counts them (any code); the `_native` call accuracy
  /// and the pass rate are kforge's stricter figures (no torch_fallback).
  double compile_rate() const { return attempts ? double(compiled) / attempts : 0; }
  double call_accuracy() const { return attempts ? double(ran) / attempts : 0; }
  double call_accuracy_native() const { return attempts ? double(ran_native) / attempts : 0; }
  double exec_accuracy_correct() const { return attempts ? double(correct) / attempts : 0; }
  double exec_accuracy() const { return attempts ? double(passed) / attempts : 0; }
};

/// Everything scored for one subset of the run (the whole run, or one category, ...).
struct Slice {
  std::string value;            ///< "all", or the category / difficulty / backend / model it holds
  int max_turn = 0;             ///< the highest turn in the slice
  Scores best;                  ///< best-attempt scoring: any turn counts
  Scores final_attempt;         ///< final-attempt scoring: each episode's last turn only
  std::vector<Scores> by_turn;  ///< [t-1] = best-attempt scoring over turns <= t (repair curve)
  AttemptStats stats;
};

/// The outcome of one problem.
struct TaskResult {
  std::string task, category, backend, model;
  int difficulty = 0;
  int samples = 0;
  int max_turn = 0;
  int compiled_samples = 0;      ///< samples that compiled at some turn
  int passed_samples = 0;        ///< samples that passed at some turn
  int final_passed_samples = 0;  ///< samples whose last attempt passed
  int first_pass_turn = 0;       ///< lowest turn at which any sample passed; 0 = never
  /// The best attempt: a pass of highest measured speedup (ties: lower turn, then sample), or
  /// the earliest pass when none was benchmarked. Empty when no sample passed.
  std::optional<AttemptRecord> best;
  double best_speedup() const { return best && best->has_speedup() ? best->speedup : 0; }
};

/// One point of the equal-budget view: k samples of every task, each run up to turn t (or its
/// end), cost on average `calls` LLM calls and `tokens` tokens per task and reach pass@k at
/// turn t. calls and tokens are k times the mean over episodes of the calls (every record, an
/// llm_error's included) and tokens spent at turns <= t, so early stopping (--stop-on pass)
/// shows as a lower cost.
struct BudgetPoint {
  int samples = 0;  ///< k
  int turn = 0;     ///< t
  double calls = 0;
  double tokens = 0;
  double pass = 0;  ///< pass@k counting turns <= t (best attempt)
};

/// BackendBench's names (its scripts/main.py and eval.py; issue 24) over the run's ATen-operator
/// problems (category "operator"), each scored by its best attempt, a pass meaning every case
/// passed: correctness score = the fraction of operators with a correct kernel (fast_0 over
/// operators); performance score = the geometric mean over all operators of the best pass's
/// speedup, 1.0 for an operator without a timed pass (BackendBench counts a failed test as its
/// reference time); perf@p = the fraction of operators correct with speedup > p (fast_p over
/// operators, at config.fast_ps). kforge's speedup of an operator is over one call of all its
/// cases (time-weighted), not BackendBench's geometric mean of per-case speedups.
struct BackendBenchScores {
  int operators = 0;
  int correct = 0;
  double correctness_score = 0;
  double performance_score = 1;
  std::map<double, double> perf_at_p;
};

/// BackendBench's scores over `tasks` (those of category "operator"); operators == 0 when none.
struct TaskResult;
BackendBenchScores backendbench_scores(const std::vector<TaskResult>& tasks, const std::vector<double>& ps);

/// Whether a library kernel holds beyond the shapes its prompt showed (issue 24 §3): its verdict
/// when judged again on unseen shapes (generalisation.hpp writes and reads these).
struct Generalisation {
  std::optional<bool> generalises;  ///< nullopt: could not be judged (the reason says why)
  std::string reason;
  std::string source_sha;  ///< the judged kernel's attempt (AttemptRecord::source_sha)
  std::string backend;
  std::string outcome;  ///< of the judging on the unseen shapes ("" when none ran)
  std::string sub_kind;
  std::string unseen;  ///< the unseen shapes: "ci+unseen: ROWS 64->71, ..." or "3/3 cases changed"
};

struct Summary {
  int schema_version = 1;
  MetricsConfig config;
  std::size_t attempts = 0;
  int max_turn = 0;
  Slice overall;
  /// dimension ("category", "difficulty", "backend", "model") -> slices sorted by value.
  std::map<std::string, std::vector<Slice>> cuts;
  std::vector<TaskResult> tasks;  ///< sorted by (task, backend, model)
  int llm_errors = 0;             ///< llm_error records left after deduplication (turns to ask again)
  int infra_errors = 0;           ///< infra_error records left after deduplication (not judged)
  /// Tasks that could not be judged at all (reference does not load, output random in its module
  /// mode): task id -> reason. summarize_run reads them from <run>/unusable.json.
  std::map<std::string, std::string> unusable;
  /// The library's kernels judged on unseen shapes: task id -> verdict. summarize_run reads them
  /// from <run>/generalisation.json (written by `kforge library export`); empty when not checked.
  std::map<std::string, Generalisation> generalisation;
  /// Passes using lower-precision math the run did not allow (precision_disallowed): their
  /// speedups are not credited in the scores above. `credit_all_precision` is the other view:
  /// best-attempt scores with those speedups credited.
  int precision_disallowed = 0;
  Scores credit_all_precision;
  /// Passes whose time was physically impossible (AttemptRecord::timing_anomaly): not credited.
  int timing_anomalies = 0;
  /// The timing noise: median over credited passes with an interval of its half-width relative
  /// to the speedup ((high - low) / 2 / speedup); 0 = no intervals recorded.
  double speedup_ci_rel_halfwidth = 0;
  /// Every (k, t) of the whole run, k = each of config.ks, t = 1..max_turn: the one-shot versus
  /// iterative question at equal LLM calls or tokens.
  std::vector<BudgetPoint> budget;
  BackendBenchScores backendbench;  ///< operators == 0: the run has no operator tasks
  std::vector<std::string> warnings;
};

/// The dimensions Summary::cuts holds, in report order.
const std::vector<std::string>& cut_dimensions();

/// The label a record has in a dimension: category ("(none)" when empty), difficulty ("1".."5",
/// "unknown" for 0), backend, model ("(none)" when empty). Throws std::invalid_argument for an
/// unknown dimension.
std::string cut_label(const AttemptRecord& r, const std::string& dimension);

/// Scores a run's records (any order). Throws std::invalid_argument when the config has a
/// k < 1.
Summary summarize(const std::vector<AttemptRecord>& records, const MetricsConfig& config = {});

/// Formats a threshold as its key in JSON and tables: 1 -> "1", 1.5 -> "1.5".
std::string threshold_label(double p);

nlohmann::json to_json(const Scores& s);
nlohmann::json to_json(const Slice& s);
nlohmann::json to_json(const TaskResult& t);
/// The summary.json object.
nlohmann::json to_json(const Summary& s);
/// task id -> {generalises (true/false/null), reason, source_sha, backend, outcome, sub_kind, unseen}.
nlohmann::json generalisation_json(const std::map<std::string, Generalisation>& g);

}  // namespace kforge
