// agent/src/scheduler.cpp — the one driver of a run's episodes (scheduler.hpp).
#include "kforge/agent/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <cstdlib>
#include <mutex>

// GCC reports a variant copy of Expected<Judged> as maybe-uninitialized (GCC bug 80635, a false
// positive of std::variant under -O2).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace kforge::agent {

namespace asio = boost::asio;

namespace {

/// Calls a port; an exception it throws completes the call with Failure{internal, exception},
/// so the resource it holds is released and the episode records it.
template <class T, class F>
void call_port(const Completion<T>& done, F&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    done(Failure{FailureKind::internal, "exception", e.what()});
  }
}

}  // namespace

/// A bound with a FIFO queue of episodes waiting for it.
struct Scheduler::Gate {
  explicit Gate(int b) : bound(std::max(1, b)) {}
  int bound, busy = 0, peak = 0;
  std::deque<std::pair<int, std::function<void()>>> queue;
  void submit(int ep, std::function<void()> start) {
    if (busy >= bound) {
      queue.emplace_back(ep, std::move(start));
      return;
    }
    peak = std::max(peak, ++busy);
    start();
  }
  void release() {
    --busy;
    if (queue.empty()) return;
    auto start = std::move(queue.front().second);
    queue.pop_front();
    peak = std::max(peak, ++busy);
    start();
  }
};

/// One judge slot (a runner): busy with at most one job, its own FIFO queue.
struct Scheduler::Slot {
  bool busy = false, retired = false;
  int failures = 0;  ///< consecutive judge failures
  std::deque<std::pair<int, std::function<void(int)>>> queue;
};

/// Keeps io_.run() from returning while episodes are active; the progress and signal waits.
struct Scheduler::Pending {
  explicit Pending(asio::io_context& io) : work(io.get_executor()), timer(io), signals(io) {}
  asio::executor_work_guard<asio::io_context::executor_type> work;
  asio::steady_timer timer;
  asio::signal_set signals;
};

/// Completions from other threads reach the scheduler only while it exists.
struct Scheduler::Guard {
  std::mutex mu;
  bool open = true;
};

Scheduler::Scheduler(asio::io_context& io, Ports ports, MachineConfig machine, SchedulerConfig cfg)
    : io_(io),
      ports_(ports),
      machine_(std::move(machine)),
      cfg_(cfg),
      llm_(std::make_unique<Gate>(cfg.llm_concurrency)),
      compile_(std::make_unique<Gate>(cfg.compile_jobs)),
      slots_(static_cast<std::size_t>(std::max(1, ports.judge->slots()))),
      guard_(std::make_shared<Guard>()) {}

Scheduler::~Scheduler() {
  std::lock_guard lk(guard_->mu);
  guard_->open = false;
}

void Scheduler::post(std::function<void()> f) {
  post_via(guard_, io_, std::move(f));
}

void Scheduler::post_via(const std::shared_ptr<Guard>& g, asio::io_context& io, std::function<void()> f) {
  std::lock_guard lk(g->mu);
  if (!g->open) return;
  asio::post(io, [g, f = std::move(f)] {
    {
      std::lock_guard lk2(g->mu);
      if (!g->open) return;
    }
    f();
  });
}

void Scheduler::add(EpisodeSpec spec) {
  EpisodeState s;
  s.task = spec.task;
  s.sample = spec.sample;
  s.turn = spec.first_turn;
  s.temperature = spec.temperature;
  s.history = std::move(spec.history);
  s.given = std::move(spec.source);
  for (const auto& h : s.history)  // the resumed episode's best, for the profile policy
    if (h.outcome == Outcome::pass) s.best_speedup = std::max(s.best_speedup.value_or(0.0), h.speedup);
  tasks_[spec.task->task->id] = spec.task;
  states_.push_back(std::move(s));
  abandoned_.push_back(false);
}

void Scheduler::spent(const std::string& task, std::int64_t tokens) {
  tokens_[task] += tokens;
}

void Scheduler::stop() {
  post([this] { stop_intake("interrupted"); });
}

Stamp Scheduler::now() {
  return ports_.clock->now();
}

RunTally Scheduler::run() {
  io_.restart();
  pending_ = std::make_unique<Pending>(io_);
  if (cfg_.handle_signals) {
    pending_->signals.add(SIGINT);
    pending_->signals.add(SIGTERM);
    pending_->signals.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      pending_->signals.async_wait([](const boost::system::error_code& e2, int) {
        if (!e2) std::_Exit(130);  // records are whole lines: a hard stop loses only unfinished work
      });
      stop_intake("interrupted");  // after the wait: it cancels the waits when nothing is left to finish
      // What is left active now is in a build or a judge: it finishes and is recorded.
      if (on_interrupt)
        on_interrupt(active_);
      else
        spdlog::warn("stopping: no new turns; finishing {} in-flight attempts (again to quit now)", active_);
    });
  }
  const Stamp start = now();
  session_ = start.utc;
  t0_ = start.ms;
  tally_.episodes = static_cast<int>(states_.size());
  active_ = static_cast<int>(states_.size());
  schedule_progress();
  for (std::size_t i = 0; i < states_.size(); ++i) {
    const int ep = static_cast<int>(i);
    post([this, ep] { deliver(ep, Begin{now(), tokens_[states_[ep].task->task->id], stopping_}); });
  }
  if (active_ == 0) pending_.reset();
  io_.run();
  pending_.reset();
  tally_.peak_llm = llm_->peak;
  tally_.peak_compiles = compile_->peak;
  return tally_;
}

void Scheduler::schedule_progress() {
  if (cfg_.progress_interval_s <= 0 || !on_progress || !pending_) return;
  pending_->timer.expires_after(
      std::chrono::milliseconds(static_cast<long>(cfg_.progress_interval_s * 1000)));
  pending_->timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !pending_) return;
    on_progress(tally_, active_);
    schedule_progress();
  });
}

void Scheduler::deliver(int ep, Event e) {
  std::optional<Event> next = std::move(e);
  while (next) {
    EpisodeState& s = states_[static_cast<std::size_t>(ep)];
    try {
      const Action a = step(s, *next, machine_);
      next = perform(ep, a);
    } catch (const std::exception& ex) {
      // Never lose an episode: its attempt in flight is recorded as infra_error/exception.
      ++tally_.crashes;
      spdlog::error("{} sample {} turn {}: {}", s.task->task->id, s.sample, s.turn, ex.what());
      next = Crashed{now(), Failure{FailureKind::internal, "exception", ex.what()}};
    }
  }
  if (active_ == 0 && pending_) {
    pending_->work.reset();
    pending_->timer.cancel();
    pending_->signals.cancel();
  }
}

std::optional<Event> Scheduler::perform(int ep, const Action& a) {
  EpisodeState& s = states_[static_cast<std::size_t>(ep)];
  return std::visit(
      [&](const auto& act) -> std::optional<Event> {
        using T = std::decay_t<decltype(act)>;
        if constexpr (std::is_same_v<T, LoadTask>) start_load(ep);
        if constexpr (std::is_same_v<T, Render>) return Rendered{now(), ports_.render->render(s)};
        if constexpr (std::is_same_v<T, Chat>) start_chat(ep, act.request);
        if constexpr (std::is_same_v<T, Build>) start_build(ep, act.source);
        if constexpr (std::is_same_v<T, Judge>) {
          if (!act.needs_runner)
            return JudgeDone{now(), ports_.judge->settle(JudgeJob{s.task, act.ev, s.rec, {}, act.deep})};
          start_judge(ep, act);
        }
        if constexpr (std::is_same_v<T, Record>) return record(ep);
        if constexpr (std::is_same_v<T, Continue>) return Begin{now(), tokens_[s.task->task->id], stopping_};
        if constexpr (std::is_same_v<T, Stop>) stopped(ep, act);
        return std::nullopt;
      },
      a);
}

void Scheduler::start_load(int ep) {
  if (stopping_) {  // a given candidate's load after its build: the run takes nothing new now
    abandon(ep);
    return;
  }
  const std::string& id = states_[static_cast<std::size_t>(ep)].task->task->id;
  if (auto it = loaded_.find(id); it != loaded_.end()) {
    post([this, ep, lr = it->second] {
      if (!abandoned_[static_cast<std::size_t>(ep)]) deliver(ep, Loaded{now(), lr});
    });
    return;
  }
  auto& waiting = loading_[id];
  waiting.push_back(ep);
  if (waiting.size() > 1) return;  // single flight: one load per task
  const backends::TaskRef ref = tasks_[id]->ref;
  submit_judge(pick_slot(id), ep, "load", [this, ep, id, ref](int slot) {
    Completion<backends::LoadResult> done = [this, g = guard_, io = &io_, ep, id,
                                             slot](Expected<backends::LoadResult> lr) {
      post_via(g, *io, [this, ep, id, slot, lr = std::move(lr)] {
        slots_[static_cast<std::size_t>(slot)].busy = false;
        end_slot_job(ep);
        // A load that works proves little of the judge; one abandoned at a stop says nothing.
        after_judge(slot, !lr.ok() && lr.failure().kind != FailureKind::cancelled, false);
        finish_load(id, lr);
      });
    };
    call_port(done, [&] { ports_.judge->load(slot, ref, done); });
  });
}

void Scheduler::finish_load(const std::string& task, Expected<backends::LoadResult> lr) {
  loaded_.emplace(task, lr);
  if (lr.ok()) tasks_[task]->load = lr.value();
  auto waiting = std::move(loading_[task]);
  loading_.erase(task);
  for (int ep : waiting)
    if (!abandoned_[static_cast<std::size_t>(ep)]) deliver(ep, Loaded{now(), lr});
}

void Scheduler::start_chat(int ep, const ChatRequest& req) {
  llm_->submit(ep, [this, ep, req] {
    Completion<ChatResult> done = [this, g = guard_, io = &io_, ep](Expected<ChatResult> r) {
      post_via(g, *io, [this, ep, r = std::move(r)] {
        llm_->release();
        if (abandoned_[static_cast<std::size_t>(ep)]) return;  // the run stopped while it was in flight
        if (r.ok())
          tokens_[states_[static_cast<std::size_t>(ep)].task->task->id] +=
              r->prompt_tokens + r->completion_tokens;
        deliver(ep, ChatDone{now(), r});
      });
    };
    call_port(done, [&] { ports_.chat->chat(req, done); });
  });
}

void Scheduler::start_build(int ep, const std::string& source) {
  const EpisodeState& s = states_[static_cast<std::size_t>(ep)];
  BuildJob job{source + s.task->module_suffix, ports_.store->attempt_dir(s.rec)};
  const std::string key = ports_.build->key(job);
  if (auto it = built_.find(key); it != built_.end()) {  // reused: the same source built earlier
    ++tally_.builds_shared;
    backends::Evaluation ev = it->second;
    ev.compile.cached = true;
    ev.seed = std::uniform_int_distribution<std::int64_t>(1, 1'000'000'000)(rng_);
    post([this, ep, ev] { deliver(ep, Built{now(), ev}); });
    return;
  }
  auto& waiting = building_[key];
  waiting.push_back(ep);
  if (waiting.size() > 1) {  // single flight: the same source is being built
    ++tally_.builds_shared;
    return;
  }
  ++tally_.builds;
  compile_->submit(ep, [this, key, job] {
    if (stopping_ && drop_build(key)) {  // queued given candidates: nothing spent on them yet
      compile_->release();
      return;
    }
    Completion<backends::Evaluation> done = [this, g = guard_, io = &io_,
                                             key](Expected<backends::Evaluation> ev) {
      post_via(g, *io, [this, key, ev = std::move(ev)] {
        compile_->release();
        finish_build(key, ev);
      });
    };
    call_port(done, [&] { ports_.build->build(job, done); });
  });
}

void Scheduler::finish_build(const std::string& key, Expected<backends::Evaluation> ev) {
  if (ev.ok()) built_.emplace(key, ev.value());  // failing compiles too: a compile error is a value
  auto waiting = std::move(building_[key]);
  building_.erase(key);
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    Expected<backends::Evaluation> mine = ev;
    if (i > 0 && mine.ok()) {
      mine->compile.cached = true;
      mine->seed = std::uniform_int_distribution<std::int64_t>(1, 1'000'000'000)(rng_);
    }
    if (!abandoned_[static_cast<std::size_t>(waiting[i])]) deliver(waiting[i], Built{now(), mine});
  }
}

void Scheduler::start_judge(int ep, const Judge& j) {
  EpisodeState& s = states_[static_cast<std::size_t>(ep)];
  JudgeJob job{s.task, j.ev, s.rec, ports_.store->attempt_dir(s.rec), j.deep};
  submit_judge(pick_slot(s.task->task->id), ep, "judge", [this, ep, job](int slot) {
    Completion<Judged> done = [this, g = guard_, io = &io_, ep, slot](Expected<Judged> r) {
      post_via(g, *io, [this, ep, slot, r = std::move(r)] {
        slots_[static_cast<std::size_t>(slot)].busy = false;
        end_slot_job(ep);
        // The judge's own failure (never the toolchain's or a reference's) counts against its slot.
        const bool failed =
            !r.ok() || (r->rec.outcome == Outcome::infra_error && r->rec.failure == FailureKind::judge);
        after_judge(slot, failed);
        deliver(ep, JudgeDone{now(), r});
      });
    };
    call_port(done, [&] { ports_.judge->judge(slot, job, done); });
  });
}

std::optional<Event> Scheduler::record(int ep) {
  EpisodeState& s = states_[static_cast<std::size_t>(ep)];
  if (auto it = slot_jobs_.find(ep); it != slot_jobs_.end()) {  // where the slots' time went
    JudgeTiming& t = s.rec.judge;
    t.session = session_;
    for (const SlotJob& j : it->second) {
      t.phases_ms["wait"] += j.start_ms - j.queued_ms;
      t.phases_ms[j.kind] += j.end_ms - j.start_ms;
      t.jobs.push_back(j);
    }
    slot_jobs_.erase(it);
  }
  ports_.store->record(s.rec, s.files);
  tally(s);
  if (on_attempt) on_attempt(s.rec);
  if (s.rec.passed()) ports_.render->learned(s);
  return Recorded{now()};
}

void Scheduler::tally(const EpisodeState& s) {
  ++tally_.attempts;
  tally_.tritonbench.add(s.rec, s.task->ref.test_block());
  if (s.rec.outcome == Outcome::llm_error) {
    ++tally_.llm_errors;
    if (cfg_.max_llm_failures > 0 && ++consecutive_llm_ >= cfg_.max_llm_failures && !tally_.llm_down) {
      tally_.llm_down = true;
      spdlog::error("{} consecutive LLM failures (last: {}); stopping the run", consecutive_llm_,
                    s.rec.message);
      stop_intake("llm_down");
    }
    return;
  }
  consecutive_llm_ = 0;
  if (s.rec.outcome == Outcome::infra_error) {
    ++tally_.infra_errors;
    spdlog::warn("{} sample {} turn {}: infra_error/{}: {}", s.rec.task, s.rec.sample, s.rec.turn,
                 s.rec.sub_kind, s.rec.message);
    if (cfg_.max_infra_failures > 0 && ++consecutive_infra_ >= cfg_.max_infra_failures &&
        !tally_.infra_down) {
      tally_.infra_down = true;
      spdlog::error("{} consecutive infrastructure failures (last: {}); stopping the run", consecutive_infra_,
                    s.rec.message);
      stop_intake("infra_down");
    }
    return;
  }
  consecutive_infra_ = 0;
  tally_.passes += s.rec.passed();
}

void Scheduler::stopped(int ep, const Stop& st) {
  const EpisodeState& s = states_[static_cast<std::size_t>(ep)];
  if (st.paused) ++tally_.paused;
  if (st.why == "token_budget") ++tally_.budget_stops;
  if (st.why == "stopped") ++tally_.stopped;
  if (st.why.rfind("unusable: ", 0) == 0 &&
      tally_.unusable.emplace(s.task->task->id, st.why.substr(10)).second && !s.given)
    spdlog::warn("task {} is unusable: {} (no LLM call is made for it)", s.task->task->id, st.why.substr(10));
  --active_;
}

void Scheduler::stop_intake(const char* why) {
  if (stopping_) return;
  stopping_ = true;
  if (std::string(why) == "interrupted") tally_.interrupted = true;
  drop_queued_chats();
}

void Scheduler::drop_queued_chats() {
  // Queued and in-flight LLM requests: nothing of those turns exists yet; --resume asks them.
  // Loads not started yet are dropped too: their episodes have asked nothing.
  // Given candidates waiting for a judge slot are dropped as well (nothing was judged yet).
  llm_->queue.clear();
  std::vector<int> dropped;
  for (auto& sl : slots_)
    std::erase_if(sl.queue, [&](const auto& job) {
      const EpisodeState& s = states_[static_cast<std::size_t>(job.first)];
      const bool drop = s.phase == Phase::load || (s.given && s.phase == Phase::judge);
      if (drop) dropped.push_back(job.first);
      return drop;
    });
  for (int ep : dropped) abandon(ep);
  for (std::size_t i = 0; i < states_.size(); ++i)
    if (states_[i].phase == Phase::chat || states_[i].phase == Phase::load) abandon(static_cast<int>(i));
  // Every episode waiting on a load is abandoned now: a load in flight (a reference starting up,
  // seconds) is ended rather than waited for when the judge threads are joined.
  if (!loading_.empty()) ports_.judge->abandon_loads();
  maybe_idle();
}

void Scheduler::abandon(int ep) {
  const auto i = static_cast<std::size_t>(ep);
  if (abandoned_[i] || states_[i].phase == Phase::done || states_[i].phase == Phase::paused) return;
  abandoned_[i] = true;
  states_[i].phase = Phase::done;
  states_[i].why = "stopped";
  ++tally_.abandoned;
  --active_;
}

bool Scheduler::drop_build(const std::string& key) {
  auto it = building_.find(key);
  if (it == building_.end()) return false;
  for (int ep : it->second)
    if (!states_[static_cast<std::size_t>(ep)].given) return false;  // a turn's reply: build it
  for (int ep : it->second) abandon(ep);
  building_.erase(it);
  maybe_idle();
  return true;
}

void Scheduler::maybe_idle() {
  if (active_ == 0 && pending_) {
    pending_->work.reset();
    pending_->timer.cancel();
    pending_->signals.cancel();
  }
}

int Scheduler::pick_slot(const std::string& task) {
  if (auto it = affinity_.find(task);
      it != affinity_.end() && !slots_[static_cast<std::size_t>(it->second)].retired)
    return it->second;
  int best = -1;
  std::size_t best_load = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].retired) continue;
    const std::size_t load = slots_[i].queue.size() + (slots_[i].busy ? 1 : 0);
    if (best < 0 || load < best_load) best = static_cast<int>(i), best_load = load;
  }
  affinity_[task] = best;
  return best;
}

double Scheduler::clock_ms() {
  return now().ms - t0_;
}

void Scheduler::end_slot_job(int ep) {
  auto it = slot_jobs_.find(ep);
  if (it != slot_jobs_.end() && !it->second.empty()) it->second.back().end_ms = clock_ms();
}

void Scheduler::submit_judge(int slot, int ep, const char* kind, std::function<void(int)> start) {
  auto timed = [this, ep, kind, queued = clock_ms(), start = std::move(start)](int on) {
    slot_jobs_[ep].push_back({kind, ports_.judge->slot_name(on), queued, clock_ms(), 0});
    start(on);
  };
  slots_[static_cast<std::size_t>(slot)].queue.emplace_back(ep, std::move(timed));
  for (std::size_t i = 0; i < slots_.size(); ++i) run_slot(static_cast<int>(i));
}

void Scheduler::run_slot(int slot) {
  Slot& sl = slots_[static_cast<std::size_t>(slot)];
  if (sl.busy || sl.retired) return;
  Slot* from = &sl;
  if (sl.queue.empty()) {  // idle: take the oldest job of the longest queue
    from = nullptr;
    for (auto& o : slots_)
      if (o.busy && !o.queue.empty() && (!from || o.queue.size() > from->queue.size())) from = &o;
    if (!from) return;
  }
  auto [ep, start] = std::move(from->queue.front());
  from->queue.pop_front();
  sl.busy = true;
  affinity_[states_[static_cast<std::size_t>(ep)].task->task->id] = slot;  // it runs here now
  int busy = 0;
  for (const auto& o : slots_) busy += o.busy;
  tally_.peak_judges = std::max(tally_.peak_judges, busy);
  start(slot);
}

void Scheduler::after_judge(int slot, bool judge_failed, bool success_counts) {
  Slot& sl = slots_[static_cast<std::size_t>(slot)];
  if (judge_failed)
    ++sl.failures;
  else if (success_counts)
    sl.failures = 0;
  if (cfg_.slot_max_failures > 0 && sl.failures >= cfg_.slot_max_failures) retire(slot);
  for (std::size_t i = 0; i < slots_.size(); ++i) run_slot(static_cast<int>(i));
}

void Scheduler::retire(int slot) {
  int live = 0;
  for (const auto& o : slots_) live += !o.retired;
  if (live <= 1) return;  // the last slot stays; max_infra_failures stops the run instead
  Slot& sl = slots_[static_cast<std::size_t>(slot)];
  sl.retired = true;
  const std::string name = ports_.judge->slot_name(slot);
  tally_.retired_slots.push_back(name);
  spdlog::warn("judge slot {} failed {} times in a row: it leaves the pool", name, sl.failures);
  auto jobs = std::move(sl.queue);
  sl.queue.clear();
  for (auto& [ep, start] : jobs) {
    const std::string& task = states_[static_cast<std::size_t>(ep)].task->task->id;
    affinity_.erase(task);
    slots_[static_cast<std::size_t>(pick_slot(task))].queue.emplace_back(ep, std::move(start));
  }
}

}  // namespace kforge::agent
