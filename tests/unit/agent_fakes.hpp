#pragma once
// tests/unit/agent_fakes.hpp — fakes of the agent loop's ports (kforge/agent/ports.hpp) for the
// state machine and scheduler tests and bench_scheduler: no threads, no I/O. Asynchronous fakes
// complete by posting to the test's io_context (after `delay` when given), so the scheduler
// sees the same interleavings it sees in a run. Single-threaded: use on the io_context's thread.
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kforge/agent/ports.hpp"

namespace kforge::test {

namespace asio = boost::asio;

/// Posts `f` to io after `ms` milliseconds (0: on the next turn of the loop).
inline void later(asio::io_context& io, double ms, std::function<void()> f) {
  if (ms <= 0) {
    asio::post(io, std::move(f));
    return;
  }
  auto t = std::make_shared<asio::steady_timer>(io, std::chrono::microseconds(static_cast<long>(ms * 1000)));
  t->async_wait([t, f = std::move(f)](const boost::system::error_code&) { f(); });
}

/// A reply "CODE:<source>" holds the candidate; anything else has no code block.
inline backends::Extracted fake_extract(const std::string& reply, const std::string&) {
  backends::Extracted ex;
  if (reply.rfind("CODE:", 0) == 0) {
    ex.ok = true;
    ex.source = reply.substr(5);
  } else {
    ex.error = backends::ExtractError::no_code_block;
    ex.message = "no code";
  }
  return ex;
}

struct FakeChat : agent::ChatPort {
  explicit FakeChat(asio::io_context& i) : io(i) {}
  asio::io_context& io;
  /// The reply for a request; default: "CODE:good".
  std::function<Expected<ChatResult>(const ChatRequest&)> reply =
      [](const ChatRequest&) -> Expected<ChatResult> {
    ChatResult r;
    r.status = ChatStatus::ok;
    r.text = "CODE:good";
    r.prompt_tokens = 10;
    r.completion_tokens = 5;
    return r;
  };
  std::function<double(const ChatRequest&)> latency_ms = [](const ChatRequest&) { return 0.0; };
  std::vector<std::string> order;  ///< "task#sample#turn" in the order requests were sent
  int in_flight = 0, peak = 0, sent = 0;
  bool hold = false;  ///< true: completions wait in `held` until release()
  std::vector<std::function<void()>> held;

  void chat(const ChatRequest& req, agent::Completion<ChatResult> done) override {
    order.push_back(req.task + "#" + std::to_string(req.sample) + "#" + std::to_string(req.turn));
    ++sent;
    peak = std::max(peak, ++in_flight);
    auto fire = [this, r = reply(req), done = std::move(done)] {
      --in_flight;
      done(r);
    };
    if (hold)
      held.push_back(std::move(fire));
    else
      later(io, latency_ms(req), std::move(fire));
  }
  void release() {
    auto h = std::move(held);
    held.clear();
    for (auto& f : h) asio::post(io, std::move(f));
  }
};

struct FakeBuild : agent::BuildPort {
  explicit FakeBuild(asio::io_context& i) : io(i) {}
  asio::io_context& io;
  double cost_ms = 0;
  int builds = 0, in_flight = 0, peak = 0;
  std::map<std::string, int> per_source;
  void build(const agent::BuildJob& job, agent::Completion<backends::Evaluation> done) override {
    ++builds;
    ++per_source[job.source];
    peak = std::max(peak, ++in_flight);
    backends::Evaluation ev;
    ev.seed = 1;
    if (job.source.find("bad") != std::string::npos) {
      ev.compile.status = backends::CompileStatus::compile_error;
      ev.outcome = Outcome::compile_error;
      ev.message = ev.compile.summary = "error: bad";
    } else {
      ev.compile.status = backends::CompileStatus::ok;
      ev.compile.artifact = "/fake/" + job.source;
    }
    later(io, cost_ms, [this, ev, done = std::move(done)] {
      --in_flight;
      done(ev);
    });
  }
  std::string key(const agent::BuildJob& job) const override { return job.source; }
};

struct FakeJudge : agent::JudgePort {
  FakeJudge(asio::io_context& i, int n) : io(i), n_slots(n), failing(static_cast<std::size_t>(n), false) {}
  asio::io_context& io;
  int n_slots;
  double cost_ms = 0;
  std::vector<bool> failing;                      ///< slot -> every job fails as judge_died
  std::map<std::string, std::set<int>> slots_of;  ///< task -> slots that judged it
  std::map<int, int> jobs_on;                     ///< slot -> jobs judged
  int loads = 0, in_flight = 0, peak = 0;
  std::set<std::string> unusable;  ///< tasks whose reference does not load
  /// Every load fails with this kind (judge: the worker died; cancelled: abandoned at a stop).
  std::optional<FailureKind> load_failure;

  int slots() const override { return n_slots; }
  std::string slot_name(int slot) const override { return "fake:" + std::to_string(slot); }
  void load(int, const backends::TaskRef& ref, agent::Completion<backends::LoadResult> done) override {
    ++loads;
    Expected<backends::LoadResult> lr = backends::LoadResult{};
    if (unusable.count(ref.id)) lr = Failure{FailureKind::reference, "reference_failed", "no Model"};
    if (load_failure) lr = Failure{*load_failure, "abandoned", "the load failed"};
    later(io, 0, [lr, done = std::move(done)] { done(lr); });
  }
  void judge(int slot, agent::JudgeJob job, agent::Completion<agent::Judged> done) override {
    peak = std::max(peak, ++in_flight);
    slots_of[job.rec.task].insert(slot);
    ++jobs_on[slot];
    agent::Judged j;
    j.rec = job.rec;
    if (failing[static_cast<std::size_t>(slot)]) {
      j.rec.outcome = Outcome::infra_error;
      j.rec.failure = FailureKind::judge;
      j.rec.sub_kind = "judge_died";
    } else {
      j.rec.outcome = job.ev.compile.artifact.string().find("good") != std::string::npos
                          ? Outcome::pass
                          : Outcome::output_mismatch;
    }
    j.detail = "judged on " + std::to_string(slot);
    later(io, cost_ms, [this, j, done = std::move(done)] {
      --in_flight;
      done(j);
    });
  }
  agent::Judged settle(agent::JudgeJob job) override {
    agent::Judged j;
    j.rec = job.rec;
    j.rec.outcome = job.ev.outcome;
    j.detail = job.ev.message;
    return j;
  }
};

struct FakeRender : agent::RenderPort {
  std::set<std::string> throw_for;  ///< tasks whose prompt throws
  int learned_count = 0;
  prompts::Prompt render(const agent::EpisodeState& s) override {
    if (throw_for.count(s.task->task->id)) throw std::runtime_error("render failed for " + s.task->task->id);
    return {"system", s.task->task->id + " turn " + std::to_string(s.turn) + " history " +
                          std::to_string(s.history.size())};
  }
  void learned(const agent::EpisodeState&) override { ++learned_count; }
};

struct FakeStore : agent::StorePort {
  std::vector<AttemptRecord> records;
  std::vector<agent::AttemptFiles> files;
  void record(const AttemptRecord& rec, const agent::AttemptFiles& f) override {
    records.push_back(rec);
    files.push_back(f);
  }
  std::filesystem::path attempt_dir(const AttemptRecord& rec) const override {
    return "/fake/" + rec.task + "/" + std::to_string(rec.sample) + "/" + std::to_string(rec.turn);
  }
};

struct FakeClock : agent::ClockPort {
  double t = 0;
  agent::Stamp now() override {
    t += 1;
    return {"2026-01-01T00:00:00.000Z", t};
  }
};

/// Tasks for the fakes: ids "t/0", "t/1", ...; kept at stable addresses.
struct FakeTasks {
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<std::unique_ptr<agent::TaskJudging>> judging;
  agent::TaskJudging* add(const std::string& id) {
    auto t = std::make_unique<Task>();
    t->id = id;
    t->category = "t";
    auto j = std::make_unique<agent::TaskJudging>();
    j->task = t.get();
    j->ref.id = id;
    tasks.push_back(std::move(t));
    judging.push_back(std::move(j));
    return judging.back().get();
  }
};

}  // namespace kforge::test
