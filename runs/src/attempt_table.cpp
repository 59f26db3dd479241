// runs/src/attempt_table.cpp — the flat attempts table (attempt_table.hpp).
#include "kforge/runs/attempt_table.hpp"

#include <cmath>
#include <cstdio>
#include <functional>

namespace kforge {

namespace {

using Get = std::function<Cell(const AttemptRecord&)>;

struct Column {
  TableColumn meta;
  Get get;
};

Cell text(const std::string& s) {
  return s;
}
Cell integer(long long v) {
  return std::to_string(v);
}
Cell boolean(bool v) {
  return std::string(v ? "true" : "false");
}
Cell real(double v) {
  if (std::isnan(v)) return std::string("nan");
  if (std::isinf(v)) return std::string(v > 0 ? "inf" : "-inf");
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return std::string(b);
}
/// A measurement whose 0 means "not measured" (attempt.hpp).
Cell measured(double v) {
  return v == 0 ? Cell{} : real(v);
}
/// Text whose "" means "none".
Cell text_or_null(const std::string& s) {
  return s.empty() ? Cell{} : Cell{s};
}

#define KF_TEXT(name, doc)                                                              \
  {                                                                                     \
    {#name, ColumnType::text, doc}, [](const AttemptRecord& r) { return text(r.name); } \
  }
#define KF_OPT_TEXT(name, doc)                                                                  \
  {                                                                                             \
    {#name, ColumnType::text, doc}, [](const AttemptRecord& r) { return text_or_null(r.name); } \
  }
#define KF_INT(name, doc)                                                                     \
  {                                                                                           \
    {#name, ColumnType::integer, doc}, [](const AttemptRecord& r) { return integer(r.name); } \
  }
#define KF_BOOL(name, doc)                                                                    \
  {                                                                                           \
    {#name, ColumnType::boolean, doc}, [](const AttemptRecord& r) { return boolean(r.name); } \
  }
#define KF_MEASURED(name, expr, doc)                                                     \
  {                                                                                      \
    {name, ColumnType::real, doc}, [](const AttemptRecord& r) { return measured(expr); } \
  }

/// Error figures exist only where a trial ran.
Cell after_trials(const AttemptRecord& r, double v) {
  return r.trials > 0 ? real(v) : Cell{};
}

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      KF_TEXT(task, "task id within its suite"),
      KF_OPT_TEXT(category, "the task's category"),
      {{"difficulty", ColumnType::integer, "1..5; null = unknown"},
       [](const AttemptRecord& r) { return r.difficulty > 0 ? integer(r.difficulty) : Cell{}; }},
      KF_INT(sample, "0-based sample (episode) within the task"),
      KF_INT(turn, "1-based turn within the episode"),
      KF_TEXT(backend, "cpu, cuda, triton, ..."),
      KF_OPT_TEXT(model, "the LLM model; null for kforge eval"),
      {{"outcome", ColumnType::text, "pass, output_mismatch, compile_error, ... (docs)"},
       [](const AttemptRecord& r) { return text(std::string(to_string(r.outcome))); }},
      KF_OPT_TEXT(sub_kind, "the outcome's sub-kind"),
      KF_OPT_TEXT(message, "one short line"),
      KF_OPT_TEXT(error_group, "TritonBench's error group of a Python failure"),
      KF_BOOL(correct, "outputs matched the reference on every trial"),
      KF_INT(trials_passed, "correctness trials passed"),
      KF_INT(trials, "correctness trials run"),
      {{"max_abs_err", ColumnType::real, "max |out - ref| over the trials; null = no trial"},
       [](const AttemptRecord& r) { return after_trials(r, r.max_abs_err); }},
      {{"max_rel_err", ColumnType::real, "max relative error; null = no trial"},
       [](const AttemptRecord& r) { return after_trials(r, r.max_rel_err); }},
      {{"mismatch_fraction", ColumnType::real,
        "mismatched elements / all, worst trial, 0..1; null = no trial"},
       [](const AttemptRecord& r) { return after_trials(r, r.mismatch_fraction); }},
      KF_MEASURED("tolerance_ratio", r.tolerance_ratio,
                  "error / tolerance (<= 1 passes); null = not reported"),
      KF_OPT_TEXT(precision, "lower-precision math found: tf32, fp16, ..."),
      KF_BOOL(precision_disallowed, "a pass below the task's precision, not credited"),
      KF_MEASURED("t_candidate_ms", r.t_candidate_ms, "candidate median ms per call; null = not timed"),
      KF_MEASURED("t_reference_ms", r.t_reference_ms, "reference median ms per call; null = not timed"),
      KF_MEASURED("t_candidate_p10_ms", r.t_candidate_p10_ms, "candidate 10th percentile, ms"),
      KF_MEASURED("t_candidate_p90_ms", r.t_candidate_p90_ms, "candidate 90th percentile, ms"),
      KF_MEASURED("t_reference_p10_ms", r.profile.t_reference_p10_ms, "reference 10th percentile, ms"),
      KF_MEASURED("t_reference_p90_ms", r.profile.t_reference_p90_ms, "reference 90th percentile, ms"),
      KF_MEASURED("cv", r.cv, "coefficient of variation of the candidate's times"),
      KF_MEASURED("speedup", r.speedup, "t_reference_ms / t_candidate_ms; null = not timed"),
      {{"speedup_credited", ColumnType::boolean, "a pass whose speedup counts (fast_p, means)"},
       [](const AttemptRecord& r) { return boolean(r.has_speedup()); }},
      KF_MEASURED("speedup_ci_low", r.speedup_ci_low, "95% bootstrap interval, low end"),
      KF_MEASURED("speedup_ci_high", r.speedup_ci_high, "95% bootstrap interval, high end"),
      KF_OPT_TEXT(timing_anomaly, "why the time is physically impossible (not credited)"),
      KF_MEASURED("achieved_gbps", r.achieved_gbps, "bytes moved per second / 1e9"),
      KF_MEASURED("achieved_tflops", r.achieved_tflops, "FLOP per second / 1e12"),
      KF_MEASURED("peak_gbps", r.profile.peak_gbps, "the device's measured DRAM peak, GB/s"),
      KF_MEASURED("peak_tflops", r.profile.peak_tflops, "the device's measured peak, TFLOP/s"),
      KF_MEASURED("dram_fraction", r.profile.dram_fraction, "achieved / peak bandwidth"),
      KF_MEASURED("flops_fraction", r.profile.flops_fraction, "achieved / peak FLOP rate"),
      {{"bottleneck", ColumnType::text, "memory, compute, latency, ...; null = not profiled"},
       [](const AttemptRecord& r) { return text_or_null(r.profile.bottleneck); }},
      {{"profiler", ColumnType::text, "the profile step that ran; null = none"},
       [](const AttemptRecord& r) { return text_or_null(r.profile.profiler); }},
      KF_MEASURED("llm_ms", r.llm_ms, "LLM call wall ms; null = no call"),
      KF_MEASURED("compile_ms", r.compile_ms, "compile wall ms; null = not compiled"),
      KF_MEASURED("check_ms", r.check_ms, "correctness check wall ms; null = not checked"),
      KF_MEASURED("bench_ms", r.bench_ms, "timing wall ms; null = not timed"),
      KF_MEASURED("total_ms", r.total_ms, "the attempt's wall ms"),
      KF_BOOL(compile_cached, "the artifact came from the compile cache"),
      KF_INT(prompt_tokens, "LLM prompt tokens"),
      KF_INT(completion_tokens, "LLM completion tokens"),
      {{"cost_usd", ColumnType::real, "LLM cost, USD"},
       [](const AttemptRecord& r) { return real(r.cost_usd); }},
      KF_OPT_TEXT(exemplar, "exemplar strategy"),
      {{"temperature", ColumnType::real, "sampling temperature"},
       [](const AttemptRecord& r) { return real(r.temperature); }},
      {{"seed", ColumnType::integer, "the check's first seed"},
       [](const AttemptRecord& r) { return integer(static_cast<long long>(r.seed)); }},
      KF_OPT_TEXT(source_sha, "SHA-256 of the candidate source"),
      KF_OPT_TEXT(artifact_sha256, "SHA-256 of the artifact the judge was handed"),
      KF_OPT_TEXT(started_at, "ISO-8601 UTC"),
      KF_OPT_TEXT(finished_at, "ISO-8601 UTC"),
      KF_OPT_TEXT(attempt_dir, "attempts/<task>/<sample>/<turn>, relative to the run"),
  };
  return cols;
}

#undef KF_TEXT
#undef KF_OPT_TEXT
#undef KF_INT
#undef KF_BOOL
#undef KF_MEASURED

void csv_field(std::string& out, const Cell& c) {
  if (!c) return;
  if (!c->empty() && c->find_first_of(",\"\r\n") == std::string::npos) {
    out += *c;
    return;
  }
  out += '"';
  for (char ch : *c) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
}

}  // namespace

const std::vector<TableColumn>& attempt_columns() {
  static const std::vector<TableColumn> meta = [] {
    std::vector<TableColumn> m;
    for (const auto& c : columns()) m.push_back(c.meta);
    return m;
  }();
  return meta;
}

std::vector<Cell> attempt_row(const AttemptRecord& r) {
  std::vector<Cell> row;
  row.reserve(columns().size());
  for (const auto& c : columns()) row.push_back(c.get(r));
  return row;
}

std::string attempts_csv(const std::vector<AttemptRecord>& records) {
  std::string out;
  const auto& cols = attempt_columns();
  for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? "," : "") + cols[i].name;
  out += "\r\n";
  for (const auto& r : records) {
    const auto row = attempt_row(r);
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      csv_field(out, row[i]);
    }
    out += "\r\n";
  }
  return out;
}

}  // namespace kforge
