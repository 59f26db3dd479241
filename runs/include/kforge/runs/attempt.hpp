// kforge/runs/attempt.hpp — one attempt's record: a row of a run's attempts.jsonl (docs/runs.md).
//
// An AttemptRecord is plain data describing one turn of one episode (task, sample): who made it
// (backend, model, exemplar strategy, temperature, seed), how it ended (Outcome + sub-kind +
// short message), what it cost (phase timings, tokens, USD) and what it measured (correctness
// trials, errors, timing statistics, speedup, achieved rates). JSON appears only here, at the
// edge: to_json writes one object, attempt_from_json reads one back. A field missing from the
// JSON reads as its default (old records stay readable); unknown fields are ignored; a field of
// the wrong type or an unknown outcome name is an error naming the line number and the field.
// Non-finite doubles (NaN, ±Inf: e.g. max_abs_err of an output full of NaN) are written as the
// strings "nan", "inf", "-inf" and read back; a JSON null reads as NaN.
//
// Conventions: sample is 0-based (0..N-1), turn is 1-based (1..T). A double of 0 in a
// measurement field (speedup, t_candidate_ms, ...) means "not measured"; to_json writes such a
// field as JSON null (a table's mean then skips it), and both null and 0 read back as 0.
// Values only; all functions are pure and thread-safe.
#pragma once

#include <compare>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kforge/common/failure.hpp"
#include "kforge/common/outcome.hpp"
#include "kforge/runs/attempt_profile.hpp"
#include "kforge/runs/judge_timing.hpp"
#include "kforge/runs/record_error.hpp"

namespace kforge {

/// Version of the attempts.jsonl row and manifest layout; bump on incompatible change.
inline constexpr int kRunSchemaVersion = 1;

struct AttemptRecord {
  // --- identity -------------------------------------------------------------------------
  std::string task;      ///< task id within its suite, e.g. "level1/19_ReLU"
  std::string category;  ///< the task's category ("" when the suite gives none)
  int difficulty = 0;    ///< 1..5, 0 = unknown
  int sample = 0;        ///< 0-based sample (episode) index within the task
  int turn = 1;          ///< 1-based turn within the episode
  std::string backend;   ///< "cpu", "cuda", "triton", ...
  std::string model;     ///< LLM model name ("" for `kforge eval`)

  // --- outcome --------------------------------------------------------------------------
  Outcome outcome = Outcome::format_error;
  std::string sub_kind;  ///< e.g. "syntax", "values", "illegal_memory_access"; "" if none
  /// Whose machinery failed (JSON "failure": "toolchain", "judge", "reference", ...), set
  /// exactly when outcome is infra_error or llm_error: decided where the failure happened and
  /// carried unchanged, never re-derived from sub_kind. Absent in records older than the field.
  std::optional<FailureKind> failure;
  std::string message;  ///< one short human line (first compiler error, CUDA error name...)
  /// (triton) TritonBench's error group of a Python exception: "Syntax", "Attr&Type",
  /// "Name&Ref", "Run&Logic", "Other" (seed 000, appendix D); "" when none.
  std::string error_group;
  std::string llm_status;  ///< the LLM call's status name ("ok", "rate_limited", ...)

  // --- phase timings, milliseconds of wall clock (0 = the phase did not run) -------------
  double llm_ms = 0;
  double compile_ms = 0;
  double check_ms = 0;
  double bench_ms = 0;
  double total_ms = 0;
  bool compile_cached = false;  ///< the artifact came from the compile cache

  // --- LLM usage --------------------------------------------------------------------------
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double cost_usd = 0;

  // --- correctness (check) ----------------------------------------------------------------
  /// The outputs matched the reference on every trial, whatever the code ran: true for a pass
  /// and for a torch_fallback whose outputs the judge still compared and found right (issue 22
  /// §3: TritonBench's figures count correct PyTorch code; kforge's pass does not).
  bool correct = false;
  int trials_passed = 0;
  int trials = 0;
  double max_abs_err = 0;  ///< max |out - ref| over the trials, on passes too
  double max_rel_err = 0;  ///< max |out - ref| / (|ref| + atol) (floored: near-zero refs do not dominate)
  double mismatch_fraction = 0;  ///< mismatched elements / all elements, worst trial, 0..1
  /// max |out - ref| / (atol_eff + rtol |ref|): how close to the line (<= 1 passes); 0 = not reported.
  double tolerance_ratio = 0;
  std::string module_mode;  ///< how the reference ran: "train" or "eval" ("" = not recorded)

  // --- precision (docs/judge.md) ---------------------------------------------------------
  /// Lower-precision math found in the artifact, comma-separated kinds ("tf32", "fp16", "bf16",
  /// "int8", "fp8"), sorted; "" = none found or not inspected.
  std::string precision;
  /// A pass whose detected precision is below the task's dtype and not allowed by the run
  /// (--allow-precision): recorded as a pass, but not credited with a speedup by default.
  bool precision_disallowed = false;

  // --- speed (bench); times in milliseconds per call ------------------------------------
  double t_candidate_ms = 0;      ///< median over repetitions
  double t_reference_ms = 0;      ///< median over repetitions, same worker
  double t_candidate_p10_ms = 0;  ///< 10th percentile
  double t_candidate_p90_ms = 0;  ///< 90th percentile
  double cv = 0;                  ///< coefficient of variation of the candidate's times
  double speedup = 0;             ///< t_reference_ms / t_candidate_ms; 0 = not benchmarked
  /// 95% percentile-bootstrap interval of the speedup over timed batches (0, 0 = not recorded).
  double speedup_ci_low = 0, speedup_ci_high = 0;
  /// Why the time is physically impossible (faster than writing the outputs at the device's
  /// measured peak bandwidth); "" = none. Such a speedup is recorded but never credited.
  std::string timing_anomaly;
  /// Why the times are too noisy to steer by, after one re-timing ("" = stable): the reference
  /// timed before and after the candidate disagree, or a batch CV is high (docs/judge.md,
  /// "Timing and peaks"). Recorded, still credited: noise is not evidence against the kernel.
  std::string timing_unstable;
  int timings = 0;                   ///< benches behind these times: 1, or 2 when re-timed; 0 = none
  double t_reference_before_ms = 0;  ///< the reference's median timed before the candidate (0: not)
  /// The run's estimate of the reference's time for this task (ms): the median of the stable
  /// reference timings of the task so far in this run, this one included; 0 = none stable yet.
  double t_reference_run_ms = 0;
  int reference_run_timings = 0;  ///< how many stable timings t_reference_run_ms is the median of
  double achieved_gbps = 0;       ///< bytes moved per second / 1e9 (task's byte formula)
  double achieved_tflops = 0;     ///< FLOP per second / 1e12 (task's FLOP formula)
  /// Where the FLOP count behind achieved_tflops comes from: "declared" (the task's formula),
  /// "estimated" (PyTorch's FLOP counter over the reference), "" = none counted.
  std::string flops_source;

  // --- provenance -------------------------------------------------------------------------
  std::string source_sha;  ///< sha256 hex of the candidate source
  /// sha256 hex of the artifact the judge was handed (the shared object, or a Python backend's
  /// module as built), "" when none was built; `library export --as-backend` copies only an
  /// artifact whose bytes still hash to this (docs/library.md).
  std::string artifact_sha256;
  std::string prompt_sha;  ///< sha256 hex of the rendered prompt
  std::string exemplar;    ///< exemplar strategy: none, add, category, bm25, library
  double temperature = 0;
  std::uint64_t seed = 0;
  std::string started_at;   ///< ISO-8601 UTC, e.g. "2026-11-22T13:50:28.123Z"
  std::string finished_at;  ///< ISO-8601 UTC
  std::string attempt_dir;  ///< relative to the run directory: attempts/<task>/<sample>/<turn>

  // --- profile (issue 11): resources, profiler, roofline, telling metrics ------------------
  AttemptProfile profile;  ///< JSON key "profile"; all defaults when not profiled

  // --- where the judge slot's time went (issue 20; judge_timing.hpp) -----------------------
  JudgeTiming judge;  ///< JSON key "judge_timing"; absent when empty

  bool passed() const { return outcome == Outcome::pass; }
  /// True when the candidate got past the toolchain: outcome not in
  /// {format_error, compile_error, forbidden_api} (compile@k counts these).
  bool compiled() const;
  /// True for a pass with a measured, finite, positive speedup that is credited: a pass using
  /// lower precision than its task allows (precision_disallowed) or with a timing_anomaly is not.
  bool has_speedup() const;
};

/// The identity of an attempt within a run.
struct AttemptKey {
  std::string task;
  int sample = 0;
  int turn = 1;
  auto operator<=>(const AttemptKey&) const = default;
  bool operator==(const AttemptKey&) const = default;
};
inline AttemptKey key_of(const AttemptRecord& r) {
  return {r.task, r.sample, r.turn};
}

/// The record as one JSON object (every field present).
nlohmann::json to_json(const AttemptRecord& r);

/// Reads a record. Missing fields take their defaults, unknown fields are ignored.
/// Throws RecordError naming `line` and the field when the value is not an object, a field
/// has the wrong type, or `outcome` is not an Outcome name.
AttemptRecord attempt_from_json(const nlohmann::json& j, std::size_t line = 0);

/// The record as one line of attempts.jsonl: compact JSON followed by '\n'.
std::string to_jsonl(const AttemptRecord& r);

/// The current time as ISO-8601 UTC with milliseconds, e.g. "2026-11-22T13:50:28.123Z".
std::string iso8601_utc_now();

// nlohmann ADL hooks, so json(record) and j.get<AttemptRecord>() work.
void to_json(nlohmann::json& j, const AttemptRecord& r);
void from_json(const nlohmann::json& j, AttemptRecord& r);

}  // namespace kforge
