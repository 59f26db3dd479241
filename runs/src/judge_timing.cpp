// runs/src/judge_timing.cpp — JSON of an attempt's judge timing (judge_timing.hpp).
#include "kforge/runs/judge_timing.hpp"

#include "kforge/runs/record_error.hpp"

namespace kforge {

using json = nlohmann::json;

json to_json(const JudgeTiming& t) {
  json jobs = json::array();
  for (const auto& j : t.jobs)
    jobs.push_back({{"kind", j.kind},
                    {"slot", j.slot},
                    {"queued_ms", j.queued_ms},
                    {"start_ms", j.start_ms},
                    {"end_ms", j.end_ms}});
  return {{"session", t.session}, {"jobs", jobs}, {"phases_ms", t.phases_ms}};
}

namespace {

[[noreturn]] void bad(std::size_t line, const std::string& field, const char* what) {
  throw RecordError(line, "judge_timing." + field, std::string("expected ") + what);
}

double number(const json& o, const char* f, std::size_t line, const std::string& at) {
  if (!o.contains(f) || o[f].is_null()) return 0;
  if (!o[f].is_number()) bad(line, at + f, "a number");
  return o[f].get<double>();
}

std::string text(const json& o, const char* f, std::size_t line, const std::string& at) {
  if (!o.contains(f) || o[f].is_null()) return "";
  if (!o[f].is_string()) bad(line, at + f, "a string");
  return o[f].get<std::string>();
}

}  // namespace

JudgeTiming judge_timing_from_json(const json& j, std::size_t line) {
  JudgeTiming t;
  if (j.is_null()) return t;
  if (!j.is_object()) bad(line, "", "an object");
  t.session = text(j, "session", line, "");
  if (j.contains("jobs") && !j["jobs"].is_null()) {
    if (!j["jobs"].is_array()) bad(line, "jobs", "an array");
    for (std::size_t i = 0; i < j["jobs"].size(); ++i) {
      const json& o = j["jobs"][i];
      const std::string at = "jobs[" + std::to_string(i) + "].";
      if (!o.is_object()) bad(line, at, "an object");
      t.jobs.push_back({text(o, "kind", line, at), text(o, "slot", line, at),
                        number(o, "queued_ms", line, at), number(o, "start_ms", line, at),
                        number(o, "end_ms", line, at)});
    }
  }
  if (j.contains("phases_ms") && !j["phases_ms"].is_null()) {
    if (!j["phases_ms"].is_object()) bad(line, "phases_ms", "an object");
    for (const auto& [k, v] : j["phases_ms"].items()) {
      if (!v.is_number()) bad(line, "phases_ms." + k, "a number");
      t.phases_ms[k] = v.get<double>();
    }
  }
  return t;
}

}  // namespace kforge
