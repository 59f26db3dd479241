#include "kforge/runs/attempt.hpp"

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

#include "kforge/common/json_text.hpp"

namespace kforge {

bool AttemptRecord::compiled() const {
  return is_model_outcome(outcome) && outcome != Outcome::format_error && outcome != Outcome::compile_error &&
         outcome != Outcome::forbidden_api;
}

bool AttemptRecord::has_speedup() const {
  return passed() && std::isfinite(speedup) && speedup > 0 && !precision_disallowed && timing_anomaly.empty();
}

namespace {

using nlohmann::json;

json number_or_string(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

/// A measurement field (0 = not measured, attempt.hpp): null when not measured, so a table's
/// mean skips it instead of counting a zero.
json measured(double v) {
  return v == 0 ? json(nullptr) : number_or_string(v);
}

const char* type_name(const json& v) {
  return v.type_name();
}

struct Reader {
  const json& j;
  std::size_t line;

  const json* find(const char* field) const {
    auto it = j.find(field);
    if (it == j.end()) return nullptr;
    return &*it;
  }
  [[noreturn]] void bad(const char* field, const std::string& expected, const json& v) const {
    throw RecordError(line, field, "expected " + expected + ", got " + type_name(v));
  }

  void str(const char* field, std::string& out) const {
    const json* v = find(field);
    if (!v || v->is_null()) return;
    if (!v->is_string()) bad(field, "a string", *v);
    out = v->get<std::string>();
  }
  void boolean(const char* field, bool& out) const {
    const json* v = find(field);
    if (!v || v->is_null()) return;
    if (!v->is_boolean()) bad(field, "a boolean", *v);
    out = v->get<bool>();
  }
  void real(const char* field, double& out) const {
    const json* v = find(field);
    if (!v) return;
    if (v->is_null()) {
      out = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    if (v->is_number()) {
      out = v->get<double>();
      return;
    }
    if (v->is_string()) {
      const auto& s = v->get_ref<const std::string&>();
      if (s == "nan") {
        out = std::numeric_limits<double>::quiet_NaN();
        return;
      }
      if (s == "inf") {
        out = std::numeric_limits<double>::infinity();
        return;
      }
      if (s == "-inf") {
        out = -std::numeric_limits<double>::infinity();
        return;
      }
    }
    bad(field, "a number (or \"nan\", \"inf\", \"-inf\")", *v);
  }
  /// A measurement field: null (not measured, written since issue 40) and 0 (older files) both
  /// read as 0, the in-memory "not measured".
  void measure(const char* field, double& out) const {
    const json* v = find(field);
    if (v && v->is_null()) {
      out = 0;
      return;
    }
    real(field, out);
  }
  template <class Int>
  void integer(const char* field, Int& out) const {
    const json* v = find(field);
    if (!v || v->is_null()) return;
    if (v->is_number_integer()) {
      if constexpr (std::is_unsigned_v<Int>) {
        if (v->is_number_unsigned()) {
          out = v->get<Int>();
          return;
        }
        if (v->get<std::int64_t>() < 0) bad(field, "a non-negative integer", *v);
        out = static_cast<Int>(v->get<std::int64_t>());
        return;
      } else {
        if (v->is_number_unsigned() &&
            v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Int>::max()))
          throw RecordError(line, field, "integer out of range");
        auto x = v->get<std::int64_t>();
        if (x < std::numeric_limits<Int>::min() || x > std::numeric_limits<Int>::max())
          throw RecordError(line, field, "integer out of range");
        out = static_cast<Int>(x);
        return;
      }
    }
    if (v->is_number_float()) {
      double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) &&
          d >= static_cast<double>(std::numeric_limits<Int>::min()) &&
          d <= static_cast<double>(std::numeric_limits<Int>::max())) {
        out = static_cast<Int>(d);
        return;
      }
    }
    bad(field, "an integer", *v);
  }
};

}  // namespace

json to_json(const AttemptRecord& r) {
  json j = json::object();
  j["task"] = r.task;
  j["category"] = r.category;
  j["difficulty"] = r.difficulty;
  j["sample"] = r.sample;
  j["turn"] = r.turn;
  j["backend"] = r.backend;
  j["model"] = r.model;
  j["outcome"] = std::string(to_string(r.outcome));
  j["sub_kind"] = r.sub_kind;
  if (r.failure) j["failure"] = std::string(to_string(*r.failure));
  j["message"] = r.message;
  if (!r.error_group.empty()) j["error_group"] = r.error_group;
  j["llm_status"] = r.llm_status;
  j["llm_ms"] = number_or_string(r.llm_ms);
  j["compile_ms"] = number_or_string(r.compile_ms);
  j["check_ms"] = number_or_string(r.check_ms);
  j["bench_ms"] = number_or_string(r.bench_ms);
  j["total_ms"] = number_or_string(r.total_ms);
  j["compile_cached"] = r.compile_cached;
  j["prompt_tokens"] = r.prompt_tokens;
  j["completion_tokens"] = r.completion_tokens;
  j["cost_usd"] = number_or_string(r.cost_usd);
  j["correct"] = r.correct;
  j["trials_passed"] = r.trials_passed;
  j["trials"] = r.trials;
  j["max_abs_err"] = number_or_string(r.max_abs_err);
  j["max_rel_err"] = number_or_string(r.max_rel_err);
  j["mismatch_fraction"] = number_or_string(r.mismatch_fraction);
  j["tolerance_ratio"] = measured(r.tolerance_ratio);
  j["module_mode"] = r.module_mode;
  j["precision"] = r.precision;
  j["precision_disallowed"] = r.precision_disallowed;
  j["t_candidate_ms"] = measured(r.t_candidate_ms);
  j["t_reference_ms"] = measured(r.t_reference_ms);
  j["t_candidate_p10_ms"] = measured(r.t_candidate_p10_ms);
  j["t_candidate_p90_ms"] = measured(r.t_candidate_p90_ms);
  j["cv"] = measured(r.cv);
  j["speedup"] = measured(r.speedup);
  j["speedup_ci_low"] = measured(r.speedup_ci_low);
  j["speedup_ci_high"] = measured(r.speedup_ci_high);
  j["timing_anomaly"] = r.timing_anomaly;
  j["timing_unstable"] = r.timing_unstable;
  j["timings"] = r.timings;
  j["t_reference_before_ms"] = measured(r.t_reference_before_ms);
  j["t_reference_run_ms"] = measured(r.t_reference_run_ms);
  j["reference_run_timings"] = r.reference_run_timings;
  j["flops_source"] = r.flops_source;
  j["achieved_gbps"] = measured(r.achieved_gbps);
  j["achieved_tflops"] = measured(r.achieved_tflops);
  j["source_sha"] = r.source_sha;
  j["artifact_sha256"] = r.artifact_sha256;
  j["prompt_sha"] = r.prompt_sha;
  j["exemplar"] = r.exemplar;
  j["temperature"] = number_or_string(r.temperature);
  j["seed"] = r.seed;
  j["started_at"] = r.started_at;
  j["finished_at"] = r.finished_at;
  j["attempt_dir"] = r.attempt_dir;
  j["profile"] = to_json(r.profile);
  if (!r.judge.empty()) j["judge_timing"] = to_json(r.judge);
  return j;
}

AttemptRecord attempt_from_json(const json& j, std::size_t line) {
  if (!j.is_object())
    throw RecordError(line, "", std::string("expected a JSON object, got ") + j.type_name());
  Reader rd{j, line};
  AttemptRecord r;
  rd.str("task", r.task);
  rd.str("category", r.category);
  rd.integer("difficulty", r.difficulty);
  rd.integer("sample", r.sample);
  rd.integer("turn", r.turn);
  rd.str("backend", r.backend);
  rd.str("model", r.model);
  if (const json* v = rd.find("outcome"); v && !v->is_null()) {
    if (!v->is_string()) rd.bad("outcome", "a string", *v);
    auto o = outcome_from_string(v->get_ref<const std::string&>());
    if (!o) throw RecordError(line, "outcome", "unknown outcome '" + v->get<std::string>() + "'");
    r.outcome = *o;
  }
  rd.str("sub_kind", r.sub_kind);
  if (const json* v = rd.find("failure"); v && !v->is_null()) {
    if (!v->is_string()) rd.bad("failure", "a string", *v);
    r.failure = failure_kind_from_string(v->get_ref<const std::string&>());
    if (!r.failure)
      throw RecordError(line, "failure", "unknown failure kind '" + v->get<std::string>() + "'");
  }
  rd.str("message", r.message);
  rd.str("error_group", r.error_group);
  rd.str("llm_status", r.llm_status);
  rd.real("llm_ms", r.llm_ms);
  rd.real("compile_ms", r.compile_ms);
  rd.real("check_ms", r.check_ms);
  rd.real("bench_ms", r.bench_ms);
  rd.real("total_ms", r.total_ms);
  rd.boolean("compile_cached", r.compile_cached);
  rd.integer("prompt_tokens", r.prompt_tokens);
  rd.integer("completion_tokens", r.completion_tokens);
  rd.real("cost_usd", r.cost_usd);
  r.correct = r.passed();  // records from before the field: only a pass was known correct
  rd.boolean("correct", r.correct);
  rd.integer("trials_passed", r.trials_passed);
  rd.integer("trials", r.trials);
  rd.real("max_abs_err", r.max_abs_err);
  rd.real("max_rel_err", r.max_rel_err);
  rd.real("mismatch_fraction", r.mismatch_fraction);
  rd.measure("tolerance_ratio", r.tolerance_ratio);
  rd.str("module_mode", r.module_mode);
  rd.str("precision", r.precision);
  rd.boolean("precision_disallowed", r.precision_disallowed);
  rd.measure("t_candidate_ms", r.t_candidate_ms);
  rd.measure("t_reference_ms", r.t_reference_ms);
  rd.measure("t_candidate_p10_ms", r.t_candidate_p10_ms);
  rd.measure("t_candidate_p90_ms", r.t_candidate_p90_ms);
  rd.measure("cv", r.cv);
  rd.measure("speedup", r.speedup);
  rd.measure("speedup_ci_low", r.speedup_ci_low);
  rd.measure("speedup_ci_high", r.speedup_ci_high);
  rd.str("timing_anomaly", r.timing_anomaly);
  rd.str("timing_unstable", r.timing_unstable);
  rd.integer("timings", r.timings);
  rd.measure("t_reference_before_ms", r.t_reference_before_ms);
  rd.measure("t_reference_run_ms", r.t_reference_run_ms);
  rd.integer("reference_run_timings", r.reference_run_timings);
  rd.str("flops_source", r.flops_source);
  rd.measure("achieved_gbps", r.achieved_gbps);
  rd.measure("achieved_tflops", r.achieved_tflops);
  rd.str("source_sha", r.source_sha);
  rd.str("artifact_sha256", r.artifact_sha256);
  rd.str("prompt_sha", r.prompt_sha);
  rd.str("exemplar", r.exemplar);
  rd.real("temperature", r.temperature);
  rd.integer("seed", r.seed);
  rd.str("started_at", r.started_at);
  rd.str("finished_at", r.finished_at);
  rd.str("attempt_dir", r.attempt_dir);
  if (const json* v = rd.find("profile")) r.profile = profile_from_json(*v, line);
  if (const json* v = rd.find("judge_timing")) r.judge = judge_timing_from_json(*v, line);
  return r;
}

std::string to_jsonl(const AttemptRecord& r) {
  // dump_json: a message with invalid UTF-8 (compiler output can contain any bytes) is written
  // with each invalid byte as \xNN (utf8.hpp) instead of throwing.
  std::string s = dump_json(to_json(r));
  s.push_back('\n');
  return s;
}

std::string iso8601_utc_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(ms));
  return out;
}

void to_json(json& j, const AttemptRecord& r) {
  j = to_json(r);
}
void from_json(const json& j, AttemptRecord& r) {
  r = attempt_from_json(j);
}

}  // namespace kforge
