// kforge/agent/scheduler.hpp — the one driver of every episode of a run (issue 20 §2).
//
// A Scheduler owns all episode states (EpisodeState, episode_machine.hpp) and runs on one
// Boost.Asio io_context: every transition happens on the thread that calls run(); ports
// complete from any thread and their completions are posted back to that context. No thread
// is held per waiting episode or request.
//
// Resources, each with its own bound and FIFO queue: LLM requests (llm_concurrency), compile
// jobs (compile_jobs), and one judge slot per runner (JudgePort::slots()). A task stays on the
// slot it ran on last (affinity: its reference stays warm there); an idle slot takes the oldest
// job of the longest queue. A slot whose judge fails `slot_max_failures` times in a row leaves
// the pool with a warning while another slot is left. Identical builds in flight are done once
// (single flight on BuildPort::key); finished builds, failing ones too, are reused for the
// rest of the run. A task's load is done once per run.
//
// An episode with a given candidate (EpisodeSpec::source, `kforge eval --jobs N`) goes build ->
// load -> judge: its compile runs on a compile slot while the judge slots load and judge other
// tasks, and everything a judge slot does (load, check, bench, profile) stays one job at a time.
//
// Stopping (stop(), SIGINT/SIGTERM when handle_signals, max_llm_failures consecutive llm_errors,
// max_infra_failures consecutive infra_errors): intake stops at once (no new turn starts, queued
// LLM requests and task loads are dropped, in-flight LLM requests and loads are abandoned: those
// turns are not recorded and --resume asks them again; a load in flight is ended at once,
// JudgePort::abandon_loads, so a stop never waits for a reference to start up); builds and
// judges in flight finish and are recorded. Given candidates not yet being compiled or judged
// are dropped too (unrecorded: nothing was spent on them). A second SIGINT/SIGTERM exits at once
// (records are whole lines). An exception while an episode is handled becomes that episode's
// recorded infra_error (sub-kind "exception") and the run goes on.
//
// Not thread-safe except stop(): construct, add() and run() on one thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kforge/agent/episode_machine.hpp"
#include "kforge/agent/ports.hpp"

namespace kforge::agent {

struct SchedulerConfig {
  int llm_concurrency = 4;
  int compile_jobs = 1;
  int max_llm_failures = 10;       ///< consecutive llm_errors that stop the run; 0: never
  int max_infra_failures = 5;      ///< consecutive infra_errors that stop the run; 0: never
  int slot_max_failures = 3;       ///< consecutive judge failures of one slot before it leaves the pool
  bool handle_signals = false;     ///< SIGINT/SIGTERM stop the run (kforge run)
  double progress_interval_s = 0;  ///< >0: on_progress every so often
};

/// One episode to run: the task (owned by the caller, outliving the run), its sample, the first
/// turn to ask and the history of recorded turns (resume).
struct EpisodeSpec {
  TaskJudging* task = nullptr;
  int sample = 0;
  int first_turn = 1;
  double temperature = 0.0;
  std::vector<prompts::PastAttempt> history;
  std::optional<std::string> source;  ///< a given candidate (eval): judged once, no LLM
};

struct Ports {
  ChatPort* chat = nullptr;
  BuildPort* build = nullptr;
  JudgePort* judge = nullptr;
  RenderPort* render = nullptr;
  StorePort* store = nullptr;
  ClockPort* clock = nullptr;
};

/// What a run did.
struct RunTally {
  int episodes = 0, attempts = 0, passes = 0, llm_errors = 0, infra_errors = 0;
  int budget_stops = 0, paused = 0, abandoned = 0, crashes = 0;
  /// Episodes a stop ended between turns (why "stopped"); with `abandoned` (ended in the middle
  /// of one), the episodes a stopped run left unfinished: --resume continues them.
  int stopped = 0;
  bool llm_down = false, infra_down = false, interrupted = false;
  std::map<std::string, std::string> unusable;  ///< task -> why it cannot be judged
  std::vector<std::string> retired_slots;       ///< slots that left the pool
  TritonBenchTally tritonbench;
  int builds = 0, builds_shared = 0;  ///< compiles started; builds served by single flight or reuse
  int peak_llm = 0, peak_compiles = 0, peak_judges = 0;
};

class Scheduler {
 public:
  Scheduler(boost::asio::io_context& io, Ports ports, MachineConfig machine, SchedulerConfig cfg);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Adds an episode (before run()).
  void add(EpisodeSpec spec);
  /// Tokens already spent on a task (resume), for the task token budget.
  void spent(const std::string& task, std::int64_t tokens);
  /// Runs every episode until it is done or paused (or the run stops); returns the tally.
  RunTally run();
  /// Stops intake (thread-safe, async-signal-unsafe: call from a thread, not a handler).
  void stop();
  /// Called on the scheduler's thread every progress_interval_s.
  std::function<void(const RunTally&, int active)> on_progress;
  /// Called on the scheduler's thread after each attempt is recorded, with its record.
  std::function<void(const AttemptRecord&)> on_attempt;
  /// Called on the scheduler's thread at the first SIGINT/SIGTERM (handle_signals), once intake
  /// has stopped, with the attempts still in flight (builds and judges that will finish and be
  /// recorded). Unset: a warning in the log says the same.
  std::function<void(int in_flight)> on_interrupt;
  /// The episodes' states (after run(): where each stopped).
  const std::vector<EpisodeState>& states() const { return states_; }

 private:
  struct Gate;
  struct Slot;
  struct Pending;
  struct Guard;

  void deliver(int ep, Event e);
  std::optional<Event> perform(int ep, const Action& a);
  void start_load(int ep);
  void start_chat(int ep, const ChatRequest& req);
  void start_build(int ep, const std::string& source);
  void start_judge(int ep, const Judge& j);
  std::optional<Event> record(int ep);
  void stopped(int ep, const Stop& st);
  void finish_build(const std::string& key, Expected<backends::Evaluation> ev);
  void finish_load(const std::string& task, Expected<backends::LoadResult> lr);
  void after_judge(int slot, bool judge_failed, bool success_counts = true);
  void tally(const EpisodeState& s);
  void stop_intake(const char* why);
  void drop_queued_chats();
  /// Ends an episode that was not recorded (the run is stopping); no-op when already done.
  void abandon(int ep);
  /// Drops the build `key` when every episode waiting on it has a given candidate.
  bool drop_build(const std::string& key);
  /// Ends io_.run() once no episode is active.
  void maybe_idle();
  int pick_slot(const std::string& task);
  /// Queues a slot job of `kind` ("load", "judge") for episode ep; its queue and start times go
  /// to slot_jobs_[ep], end_slot_job stamps its end.
  void submit_judge(int slot, int ep, const char* kind, std::function<void(int)> start);
  void end_slot_job(int ep);
  double clock_ms();  ///< ms since the run's session began
  void run_slot(int slot);
  void retire(int slot);
  void schedule_progress();
  /// Runs f on the scheduler's thread (from any thread); dropped once the scheduler is gone.
  void post(std::function<void()> f);
  /// The same for a port's completion, which may run after the scheduler is gone: it reaches
  /// neither the scheduler nor `io` once the guard is closed.
  static void post_via(const std::shared_ptr<Guard>& g, boost::asio::io_context& io, std::function<void()> f);
  Stamp now();
  int active() const { return active_; }

  boost::asio::io_context& io_;
  Ports ports_;
  MachineConfig machine_;
  SchedulerConfig cfg_;
  std::vector<EpisodeState> states_;
  std::vector<bool> abandoned_;
  std::unique_ptr<Gate> llm_, compile_;
  std::vector<Slot> slots_;
  std::map<std::string, int> affinity_;                ///< task -> the slot it ran on last
  std::map<std::string, std::vector<int>> building_;   ///< build key -> waiting episodes (leader first)
  std::map<std::string, backends::Evaluation> built_;  ///< build key -> finished build
  std::map<int, std::string> build_key_of_;            ///< episode -> the key it waits on
  std::map<std::string, std::vector<int>> loading_;    ///< task -> episodes waiting for its load
  std::map<std::string, Expected<backends::LoadResult>> loaded_;
  std::map<std::string, TaskJudging*> tasks_;
  std::map<std::string, std::int64_t> tokens_;
  /// The slot jobs of each episode's attempt in flight (judge_timing.hpp), moved into its
  /// record when it is recorded.
  std::map<int, std::vector<SlotJob>> slot_jobs_;
  std::string session_;  ///< when run() began (UTC); slot job times are ms since t0_
  double t0_ = 0;
  std::shared_ptr<Guard> guard_;
  std::unique_ptr<Pending> pending_;  ///< keeps io_.run() alive while episodes are active
  std::mt19937_64 rng_{std::random_device{}()};
  RunTally tally_;
  int active_ = 0, consecutive_llm_ = 0, consecutive_infra_ = 0;
  bool stopping_ = false;
};

}  // namespace kforge::agent
