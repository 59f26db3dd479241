// agent/src/episode_machine.cpp — the episode's transition function (episode_machine.hpp).
#include "kforge/agent/episode_machine.hpp"

#include <algorithm>
#include <stdexcept>

#include "kforge/agent/attempt_record.hpp"
#include "kforge/backends/resource_usage.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

namespace kforge::agent {

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::idle:
      return "idle";
    case Phase::load:
      return "load";
    case Phase::render:
      return "render";
    case Phase::chat:
      return "chat";
    case Phase::build:
      return "build";
    case Phase::judge:
      return "judge";
    case Phase::record:
      return "record";
    case Phase::paused:
      return "paused";
    case Phase::done:
      return "done";
  }
  return "unknown";
}

prompts::PastAttempt past_from_record(const AttemptRecord& r, const std::string& source,
                                      const std::string& detail) {
  prompts::PastAttempt p;
  p.turn = r.turn;
  p.source = source;
  p.outcome = r.outcome;
  p.sub_kind = r.sub_kind;
  p.detail = detail;
  p.speedup = r.speedup;
  p.achieved_gbps = r.achieved_gbps;
  p.achieved_tflops = r.achieved_tflops;
  p.t_candidate_ms = r.t_candidate_ms;
  p.t_candidate_p10_ms = r.t_candidate_p10_ms;
  p.t_candidate_p90_ms = r.t_candidate_p90_ms;
  p.t_reference_ms = r.t_reference_ms;
  p.t_reference_p10_ms = r.profile.t_reference_p10_ms;
  p.t_reference_p90_ms = r.profile.t_reference_p90_ms;
  p.peak_gbps = r.profile.peak_gbps;
  p.peak_tflops = r.profile.peak_tflops;
  p.bottleneck = r.profile.bottleneck;
  p.bottleneck_reason = r.profile.bottleneck_reason;
  p.findings = r.profile.findings;
  p.profiler_note = r.profile.profiler_note;
  p.candidate_kernels = r.profile.candidate_kernels;
  p.reference_kernels = r.profile.reference_kernels;
  if (r.passed()) p.resources = backends::describe_resources(r.profile.resources);
  p.timing_anomaly = r.timing_anomaly;
  p.timing_unstable = r.timing_unstable;
  p.t_reference_run_ms = r.t_reference_run_ms;
  p.reference_run_timings = r.reference_run_timings;
  return p;
}

namespace {

[[noreturn]] void unexpected(const EpisodeState& s, const char* event) {
  throw std::logic_error(std::string("episode machine: event ") + event + " in phase " +
                         std::string(to_string(s.phase)));
}

void expect(const EpisodeState& s, Phase p, const char* event) {
  if (s.phase != p) unexpected(s, event);
}

Action finish(EpisodeState& s, bool paused, std::string why) {
  s.phase = paused ? Phase::paused : Phase::done;
  s.why = why;
  return Stop{paused, std::move(why)};
}

/// The attempt's record is complete: its timing, result.json; the driver writes it.
Action to_record(EpisodeState& s, const Stamp& now, const std::string& llm_message) {
  s.rec.total_ms = now.ms - s.started_ms;
  s.rec.finished_at = now.utc;
  auto& r = s.files.result;
  r["outcome"] = std::string(to_string(s.rec.outcome));
  r["sub_kind"] = s.rec.sub_kind;
  if (s.given) {  // no LLM: the evaluation's own message
    r["message"] = s.message.empty() ? s.detail : s.message;
    s.phase = Phase::record;
    return Record{};
  }
  r["message"] = s.detail;
  r["llm_status"] = s.rec.llm_status;
  r["llm_message"] = llm_message;
  r["in_history"] = s.in_history;
  s.phase = Phase::record;
  return Record{};
}

/// A kforge-side failure of the attempt in flight: infra_error, not shown to the model.
Action infra(EpisodeState& s, const Stamp& now, const Failure& f) {
  s.rec.outcome = Outcome::infra_error;
  s.rec.failure = f.kind;
  s.rec.sub_kind = f.sub_kind.empty() ? std::string(to_string(f.kind)) : f.sub_kind;
  s.rec.message = truncate_middle(f.message, 400);
  s.detail = s.rec.message;
  s.in_history = false;
  return to_record(s, now, "");
}

/// A fresh record for the turn in flight: coordinates, model, start time.
void start_attempt(EpisodeState& s, const Stamp& now, const MachineConfig& cfg) {
  const Task& t = *s.task->task;
  s.rec = AttemptRecord{};
  s.rec.task = t.id;
  s.rec.category = t.category;
  s.rec.difficulty = t.difficulty;
  s.rec.sample = s.sample;
  s.rec.turn = s.turn;
  s.rec.backend = cfg.backend;
  s.rec.model = cfg.model;
  s.rec.exemplar = cfg.exemplar;
  s.rec.temperature = s.temperature;
  s.rec.started_at = now.utc;
  s.rec.attempt_dir = attempt_rel_path(t.id, s.sample, s.turn).string();
  s.started_ms = now.ms;
  s.files = AttemptFiles{};
  s.source.clear();
  s.detail.clear();
  s.in_history = true;
}

/// The judge stage of the attempt in flight, with the run's profile policy.
Action to_judge(EpisodeState& s, const backends::Evaluation& ev, const MachineConfig& cfg) {
  s.phase = Phase::judge;
  return Judge{ev, ev.compile.ok(), DeepProfile{cfg.profile_every_pass, s.best_speedup}};
}

/// A given candidate (eval): its one attempt starts with the build.
Action begin_given(EpisodeState& s, const Begin& e, const MachineConfig& cfg) {
  start_attempt(s, e.now, cfg);
  s.source = *s.given;
  s.rec.source_sha = sha256_hex(s.source);
  s.phase = Phase::build;
  return Build{s.source};
}

/// A given candidate whose task's reference cannot be used: recorded once, then unusable.
Action given_unusable(EpisodeState& s, const Stamp& now, const Failure& failure) {
  const std::string& error = failure.message;
  s.unusable = unusable_reason(failure);
  s.rec.outcome = Outcome::infra_error;
  s.rec.failure = failure.kind;
  s.rec.sub_kind = failure.sub_kind;  // reference_failed or unjudgeable, as the judge typed it
  s.rec.message = truncate_middle(s.unusable, 400);
  s.detail = s.message = s.unusable;
  s.in_history = false;
  s.files.result["traceback"] = error;
  return to_record(s, now, "");
}

Action on_begin(EpisodeState& s, const Begin& e, const MachineConfig& cfg) {
  expect(s, Phase::idle, "Begin");
  if (e.stopping) return finish(s, false, "stopped");
  if (s.given) return begin_given(s, e, cfg);
  if (!s.loaded) {
    s.phase = Phase::load;
    return LoadTask{};
  }
  if (s.turn > cfg.turns) return finish(s, false, "turns");
  if (cfg.task_token_budget > 0 && e.task_tokens >= cfg.task_token_budget)
    return finish(s, false, "token_budget");
  start_attempt(s, e.now, cfg);
  s.phase = Phase::render;
  return Render{};
}

Action on_loaded(EpisodeState& s, const Loaded& e, const MachineConfig& cfg) {
  expect(s, Phase::load, "Loaded");
  if (s.given) {  // the build waited for the load; the attempt is in flight
    if (!e.load.ok()) return given_unusable(s, e.now, e.load.failure());
    s.loaded = true;
    return to_judge(s, *s.built, cfg);
  }
  s.phase = Phase::idle;
  if (!e.load.ok()) return finish(s, false, "unusable: " + unusable_reason(e.load.failure()));
  s.loaded = true;
  return Continue{};
}

Action on_rendered(EpisodeState& s, const Rendered& e, const MachineConfig& cfg) {
  expect(s, Phase::render, "Rendered");
  const std::string md = e.prompt.markdown();
  s.rec.prompt_sha = sha256_hex(md);
  s.files.files["prompt.md"] = md;
  Chat c;
  c.request.messages = {{"system", e.prompt.system}, {"user", e.prompt.user}};
  c.request.temperature = s.temperature;
  c.request.top_p = cfg.top_p;
  c.request.max_tokens = cfg.max_tokens;
  if (!cfg.reasoning_effort.empty()) c.request.reasoning_effort = cfg.reasoning_effort;
  c.request.seed = cfg.seed + s.sample;
  c.request.task = s.rec.task;
  c.request.sample = s.sample;
  c.request.turn = s.turn;
  s.phase = Phase::chat;
  return c;
}

Action on_chat(EpisodeState& s, const ChatDone& e, const MachineConfig& cfg) {
  expect(s, Phase::chat, "ChatDone");
  if (!e.reply.ok()) {  // the endpoint failed: no model output; the episode pauses here
    const Failure& f = e.reply.failure();
    s.rec.llm_status = f.sub_kind;
    s.rec.llm_ms = e.now.ms - s.started_ms;
    s.rec.outcome = Outcome::llm_error;
    s.rec.failure = f.kind;
    s.rec.sub_kind = f.sub_kind;
    s.rec.message = truncate_middle("LLM call failed: " + f.message, 400);
    s.detail = s.rec.message;
    s.in_history = false;
    s.files.files["response.txt"] = "";
    return to_record(s, e.now, f.message);
  }
  const ChatResult& cr = e.reply.value();
  s.rec.llm_status = std::string(to_string(cr.status));
  s.rec.llm_ms = cr.latency_ms;
  s.rec.prompt_tokens = cr.prompt_tokens;
  s.rec.completion_tokens = cr.completion_tokens;
  s.rec.cost_usd = cr.cost_usd.value_or(0.0);
  s.files.files["response.txt"] = cr.text;
  if (!cr.ok()) {  // the model answered with nothing
    s.rec.outcome = Outcome::format_error;
    s.rec.sub_kind = s.rec.llm_status;
    s.rec.message =
        "The reply had no text content" +
        (cr.finish_reason.empty() ? std::string(".") : " (finish reason: " + cr.finish_reason + ").");
    s.detail = s.rec.message;
    return to_record(s, e.now, cr.message);
  }
  auto ex = cfg.extract(cr.text, entry_point(*s.task));
  if (!ex.ok) {
    s.rec.outcome = Outcome::format_error;
    s.rec.sub_kind = std::string(backends::to_string(ex.error));
    s.rec.message = truncate_middle(ex.message, 400);
    s.detail = ex.message;
    return to_record(s, e.now, cr.message);
  }
  s.source = ex.source;
  s.rec.source_sha = sha256_hex(s.source);
  s.files.files[cfg.source_file] = s.source;
  s.phase = Phase::build;
  return Build{s.source};
}

Action on_built(EpisodeState& s, const Built& e, const MachineConfig& cfg) {
  expect(s, Phase::build, "Built");
  if (!e.ev.ok()) return infra(s, e.now, e.ev.failure());
  if (s.given && !s.loaded) {  // a given candidate: the task's load next, then the judge
    s.built = e.ev.value();
    s.phase = Phase::load;
    return LoadTask{};
  }
  return to_judge(s, e.ev.value(), cfg);
}

Action on_judged(EpisodeState& s, const JudgeDone& e) {
  expect(s, Phase::judge, "JudgeDone");
  if (!e.judged.ok()) return infra(s, e.now, e.judged.failure());
  const Judged& j = e.judged.value();
  s.rec = j.rec;
  s.detail = j.detail;
  s.message = j.message;
  if (!j.build_log.empty()) s.files.files["build.log"] = j.build_log;
  s.files.result["compile_log"] = j.build_log;
  if (!j.perf_inputs.empty()) s.files.result["perf_inputs"] = j.perf_inputs;
  // kforge's own failure (toolchain, judge, reference): its text never reaches the model.
  if (s.rec.outcome == Outcome::infra_error) s.in_history = false;
  return to_record(s, e.now, "");
}

Action on_recorded(EpisodeState& s, const MachineConfig& cfg) {
  expect(s, Phase::record, "Recorded");
  s.phase = Phase::idle;
  if (!s.unusable.empty()) return finish(s, false, "unusable: " + s.unusable);
  if (s.rec.outcome == Outcome::llm_error) return finish(s, true, "llm_error");
  if (s.rec.outcome == Outcome::infra_error) return finish(s, true, "infra_error");
  if (s.rec.passed()) s.best_speedup = std::max(s.best_speedup.value_or(0.0), credited_speedup(s.rec));
  if (s.given) return finish(s, false, "judged");
  if (s.in_history) s.history.push_back(past_from_record(s.rec, s.source, s.detail));
  if (s.rec.passed() && cfg.stop_on_pass) return finish(s, false, "pass");
  ++s.turn;
  return Continue{};
}

Action on_crashed(EpisodeState& s, const Crashed& e, const MachineConfig& cfg) {
  if (s.phase == Phase::paused || s.phase == Phase::done) return Stop{s.phase == Phase::paused, s.why};
  if (s.phase == Phase::record) {  // the record itself failed to be written: nothing more to do
    s.phase = Phase::idle;
    return finish(s, true, "infra_error: " + e.failure.message);
  }
  if (s.phase == Phase::idle || (s.phase == Phase::load && !s.given))
    start_attempt(s, e.now, cfg);  // recorded all the same
  return infra(s, e.now, e.failure);
}

}  // namespace

Action step(EpisodeState& s, const Event& e, const MachineConfig& cfg) {
  return std::visit(
      [&](const auto& ev) -> Action {
        using T = std::decay_t<decltype(ev)>;
        if constexpr (std::is_same_v<T, Begin>) return on_begin(s, ev, cfg);
        if constexpr (std::is_same_v<T, Loaded>) return on_loaded(s, ev, cfg);
        if constexpr (std::is_same_v<T, Rendered>) return on_rendered(s, ev, cfg);
        if constexpr (std::is_same_v<T, ChatDone>) return on_chat(s, ev, cfg);
        if constexpr (std::is_same_v<T, Built>) return on_built(s, ev, cfg);
        if constexpr (std::is_same_v<T, JudgeDone>) return on_judged(s, ev);
        if constexpr (std::is_same_v<T, Recorded>) return on_recorded(s, cfg);
        if constexpr (std::is_same_v<T, Crashed>) return on_crashed(s, ev, cfg);
      },
      e);
}

}  // namespace kforge::agent
