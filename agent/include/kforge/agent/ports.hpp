// kforge/agent/ports.hpp — the side effects of the agent loop behind small interfaces
// (issue 20 §2): chat, build, judge (load + check + bench + profile), render, store, clock.
//
// The scheduler (scheduler.hpp) is the only caller. It owns every bound and queue: a port is
// called only when its resource has a free slot, and starts the work at once. Asynchronous
// ports complete through the callback they are given, from any thread (the scheduler posts the
// completion back to its event loop); the callback is called exactly once. Synchronous ports
// (render, store, clock, settle) run on the scheduler's thread and must be quick.
// Every expected failure completes as a Failure (kforge/common/failure.hpp), never an
// exception; an exception a port throws is caught by the scheduler and recorded as the
// episode's infra_error.
//
// The real adapters (make_*_port below): libcurl's multi interface for chat
// (LlmClient::chat_async: one thread for all requests), a pool of `jobs` compile threads, one
// thread per runner (RunnerClient) for the judge, RunDir for the store, the steady and system
// clocks. Test fakes live with the tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/episode_machine.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/common/failure.hpp"

namespace kforge {
class RunDir;
}

namespace kforge::agent {

template <class T>
using Completion = std::function<void(Expected<T>)>;

class ChatPort {
 public:
  virtual ~ChatPort() = default;
  /// Sends one chat request (with the client's retries); completes with the reply or a
  /// Failure{llm, <ChatStatus name>}. An empty reply is a value (ChatStatus::empty_reply).
  virtual void chat(const ChatRequest& req, Completion<ChatResult> done) = 0;
};

/// What the build stage needs: the source and the attempt's directory.
struct BuildJob {
  std::string source;
  std::filesystem::path workdir;
};

class BuildPort {
 public:
  virtual ~BuildPort() = default;
  /// Compiles the job (the scheduler holds a compile slot meanwhile). A compile error is a
  /// value (Evaluation::outcome); a Failure only when kforge itself failed.
  virtual void build(const BuildJob& job, Completion<backends::Evaluation> done) = 0;
  /// The single-flight key of a job: equal keys compile to the same result (issue 20 §2).
  virtual std::string key(const BuildJob& job) const = 0;
};

/// What the judge stage needs for one attempt.
struct JudgeJob {
  const TaskJudging* task = nullptr;
  backends::Evaluation ev;
  AttemptRecord rec;
  std::filesystem::path workdir;
  DeepProfile deep;  ///< which passes get the ncu profile (judge_candidate)
};

class JudgePort {
 public:
  virtual ~JudgePort() = default;
  /// The judge slots (one per runner: a GPU, or a cpu runner).
  virtual int slots() const = 0;
  /// A name for slot i, for warnings and the manifest ("cuda:0").
  virtual std::string slot_name(int slot) const = 0;
  /// Loads a task on slot `slot` (shapes, formulas); the runner keeps it warm.
  virtual void load(int slot, const backends::TaskRef& ref, Completion<backends::LoadResult> done) = 0;
  /// Ends every load in flight at once, and answers later ones at once (the run is stopping and
  /// no episode waits for a load): each still completes, with Failure{cancelled, "abandoned"};
  /// checks and benches are untouched.
  /// Thread-safe. Default: nothing to end.
  virtual void abandon_loads() {}
  /// Checks, benches and profiles a compiled candidate on slot `slot`.
  virtual void judge(int slot, JudgeJob job, Completion<Judged> done) = 0;
  /// Settles a candidate that did not build (no runner, synchronous).
  virtual Judged settle(JudgeJob job) = 0;
};

class RenderPort {
 public:
  virtual ~RenderPort() = default;
  /// The prompt for the episode's next turn (its history, the run's exemplars).
  virtual prompts::Prompt render(const EpisodeState& s) = 0;
  /// A passing attempt: the library strategy may show it to later prompts.
  virtual void learned(const EpisodeState& s) = 0;
};

class StorePort {
 public:
  virtual ~StorePort() = default;
  /// Writes the attempt's files and appends its record (durable before it returns).
  virtual void record(const AttemptRecord& rec, const AttemptFiles& files) = 0;
  /// The attempt's directory (its build and profile work directories live under it).
  virtual std::filesystem::path attempt_dir(const AttemptRecord& rec) const = 0;
};

class ClockPort {
 public:
  virtual ~ClockPort() = default;
  virtual Stamp now() = 0;
};

/// What the real render port needs: the run's judging setup, the prompt's facts, the exemplar
/// store and strategy, and the library of passing kernels (grown by learned()).
struct RenderSetup {
  const AttemptSetup* setup = nullptr;
  int trials = 5;
  std::string device;  ///< fallback device name
  prompts::HardwareFacts hardware;
  const retrieval::ExemplarStore* store = nullptr;
  retrieval::Strategy strategy = retrieval::Strategy::none;
  prompts::HistoryPolicy policy = prompts::HistoryPolicy::last;
  int token_budget = 6000;
  std::vector<retrieval::Exemplar> library;  ///< passing kernels recorded so far (resume)
  int max_tokens = 0;                        ///< the reply's token limit, stated in the prompt
};

/// The real adapters.
std::unique_ptr<RenderPort> make_render_port(RenderSetup setup);
std::unique_ptr<ChatPort> make_chat_port(LlmClient& client);
/// `jobs` compile threads; keys hash the backend name and the source.
std::unique_ptr<BuildPort> make_build_port(const AttemptSetup& setup, int jobs);
/// One thread per runner; the runners are owned by the caller and outlive the port.
std::unique_ptr<JudgePort> make_judge_port(const AttemptSetup& setup,
                                           std::vector<backends::RunnerClient*> runners);
std::unique_ptr<StorePort> make_store_port(RunDir& run);
std::unique_ptr<ClockPort> make_clock_port();

}  // namespace kforge::agent
