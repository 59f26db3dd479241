// kforge/agent/episode_machine.hpp — one episode of `kforge run` as a pure state machine
// (issue 20 §2): load -> render -> llm -> build -> judge -> record -> next turn / paused / done.
//
// `step(state, event, config)` is the whole transition function: it reads the event (the
// completion of the side effect the previous action asked for), updates the episode's state
// and returns the next action for the driver (the scheduler) to carry out through its ports
// (ports.hpp). No threads, no I/O, no clock: times come in the events. The state is a value
// owned by its driver; the TaskJudging it points to is owned by the driver too and outlives it.
//
// Outcomes the machine decides: an LLM failure is an llm_error attempt and pauses the episode;
// an empty reply or a reply without a usable code block is the model's format_error; a failed
// build, judge or an exception (a Failure) is an infra_error attempt that pauses the episode;
// a pass ends it under stop_on_pass; the last turn, the task's token budget or a stopping run
// end it. A task whose reference does not load ends every episode of it as unusable.
//
// An episode with a given candidate (EpisodeState::given: `kforge eval`) asks no LLM: begin ->
// build -> load -> judge -> record -> done, one attempt; the build comes first so that compiles
// run while the judge slots load and judge other tasks. A task whose reference does not load is
// then recorded once as an infra_error attempt (reference_failed or unjudgeable, the error in
// result.json's traceback) and ends the episode as unusable.
//
// Profiling (issue 21 §4): the Judge action says which passes get the ncu profile (DeepProfile):
// every pass under profile_every_pass, else a pass that improves the episode's best credited
// speedup (best_speedup, kept from the recorded passes and the resumed history).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/common/failure.hpp"
#include "kforge/prompts/prompts.hpp"

namespace kforge::agent {

/// The run's constants the machine reads. `extract` pulls the candidate out of a reply for a
/// given entry point (Backend::extract's rule; pure).
struct MachineConfig {
  int turns = 1;
  bool stop_on_pass = true;
  std::int64_t task_token_budget = 0;  ///< 0: none
  std::string backend, model, exemplar, source_file = "kernel.cpp";
  double top_p = 1.0;
  int max_tokens = 4096;
  std::string reasoning_effort;
  std::int64_t seed = 0;
  bool profile_every_pass = false;  ///< ncu on every pass, not only on a pass that improves the best
  std::function<backends::Extracted(const std::string& reply, const std::string& entry)> extract;
};

enum class Phase { idle, load, render, chat, build, judge, record, paused, done };
std::string_view to_string(Phase p);

/// Wall-clock and steady time of an event, from the driver's clock port.
struct Stamp {
  std::string utc;  ///< ISO-8601 UTC
  double ms = 0;    ///< steady clock, milliseconds
};

struct EpisodeState {
  const TaskJudging* task = nullptr;  ///< the driver's; its load is filled by the driver
  int sample = 0;
  int turn = 1;              ///< the turn in flight, or the next one
  double temperature = 0.0;  ///< this sample's
  Phase phase = Phase::idle;
  bool loaded = false;  ///< the task's load came back ok
  std::vector<prompts::PastAttempt> history;
  std::optional<std::string> given;    ///< the candidate to judge (eval): no LLM, one attempt
  std::optional<double> best_speedup;  ///< the best credited speedup of the episode's passes so far
  // --- the attempt in flight -------------------------------------------------------------
  AttemptRecord rec;
  AttemptFiles files;
  std::string source, detail;
  std::string message;  ///< the evaluation's full message (a given candidate's result.json)
  std::optional<backends::Evaluation> built;  ///< a given candidate's build, waiting for the load
  std::string unusable;                       ///< why the task cannot be judged (a given candidate's episode)
  bool in_history = true;
  double started_ms = 0;
  std::string why;  ///< why the episode paused or ended
};

// Events: the completion of the last action (or, for Begin, the driver's go-ahead for a turn).
struct Begin {
  Stamp now;
  std::int64_t task_tokens = 0;  ///< LLM tokens spent on this task so far (all samples)
  bool stopping = false;         ///< the run takes no new turns (Ctrl-C, failure limits)
};
struct Loaded {
  Stamp now;
  Expected<backends::LoadResult> load;
};
struct Rendered {
  Stamp now;
  prompts::Prompt prompt;
};
struct ChatDone {
  Stamp now;
  Expected<ChatResult> reply;
};
struct Built {
  Stamp now;
  Expected<backends::Evaluation> ev;
};
struct JudgeDone {
  Stamp now;
  Expected<Judged> judged;
};
struct Recorded {
  Stamp now;
};
/// An exception escaped while the episode was being handled: recorded as infra_error/exception.
struct Crashed {
  Stamp now;
  Failure failure;
};
using Event = std::variant<Begin, Loaded, Rendered, ChatDone, Built, JudgeDone, Recorded, Crashed>;

// Actions: what the driver does next for this episode.
struct LoadTask {};
struct Render {};
struct Chat {
  ChatRequest request;
};
struct Build {
  std::string source;
};
struct Judge {
  backends::Evaluation ev;
  bool needs_runner = true;  ///< false: the candidate did not build; settle it without a slot
  DeepProfile deep;          ///< which passes get the ncu profile
};
struct Record {};    ///< write state.rec and state.files, then send Recorded
struct Continue {};  ///< send Begin for the next turn
struct Stop {
  bool paused = false;  ///< true: paused at an llm_error/infra_error (--resume asks again)
  std::string why;
};
using Action = std::variant<LoadTask, Render, Chat, Build, Judge, Record, Continue, Stop>;

/// The transition function. Throws std::logic_error for an event the phase does not expect
/// (a driver bug).
Action step(EpisodeState& s, const Event& e, const MachineConfig& cfg);

/// A PastAttempt for the prompt's history from a record, its source and its feedback.
prompts::PastAttempt past_from_record(const AttemptRecord& r, const std::string& source,
                                      const std::string& detail);

}  // namespace kforge::agent
