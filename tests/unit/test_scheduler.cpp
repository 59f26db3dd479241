// [scheduler] the one driver of a run's episodes (agent/scheduler.hpp) with fake ports: bounds,
// FIFO order, single flight, affinity, a failing slot, cancellation, pause and resume, and an
// exception inside one episode. One thread: the fakes complete through the io_context.
#include <boost/asio/io_context.hpp>

#include "agent_fakes.hpp"
#include "catch.hpp"
#include "kforge/agent/scheduler.hpp"

using namespace kforge;
using namespace kforge::agent;

namespace {

struct Rig {
  boost::asio::io_context io;
  test::FakeChat chat{io};
  test::FakeBuild build{io};
  test::FakeJudge judge;
  test::FakeRender render;
  test::FakeStore store;
  test::FakeClock clock;
  test::FakeTasks tasks;
  MachineConfig mc;
  SchedulerConfig sc;
  explicit Rig(int slots = 1) : judge(io, slots) {
    mc.turns = 1;
    mc.extract = test::fake_extract;
    sc.llm_concurrency = 2;
    sc.compile_jobs = 1;
  }
  Ports ports() { return {&chat, &build, &judge, &render, &store, &clock}; }
  /// n tasks x samples episodes.
  void add(Scheduler& s, int n, int samples = 1) {
    for (int t = 0; t < n; ++t) {
      TaskJudging* tj = tasks.add("t/" + std::to_string(t));
      for (int k = 0; k < samples; ++k) s.add({tj, k, 1, 0.0, {}, {}});
    }
  }
  int count(Outcome o) const {
    int n = 0;
    for (const auto& r : store.records) n += r.outcome == o;
    return n;
  }
};

}  // namespace

TEST_CASE("scheduler: every resource keeps its bound; LLM requests are served first come, first served",
          "[scheduler]") {
  Rig rig(2);
  rig.sc.llm_concurrency = 3;
  rig.sc.compile_jobs = 2;
  rig.chat.latency_ms = [](const ChatRequest&) { return 2.0; };
  rig.build.cost_ms = 1;
  rig.judge.cost_ms = 1;
  rig.chat.reply = [](const ChatRequest& r) -> Expected<ChatResult> {
    ChatResult c;
    c.status = ChatStatus::ok;
    c.text = "CODE:good" + r.task;  // distinct sources: no single flight
    return c;
  };
  Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
  rig.add(s, 12);
  const RunTally t = s.run();
  CHECK(t.attempts == 12);
  CHECK(t.passes == 12);
  CHECK(rig.chat.peak == 3);
  CHECK(t.peak_llm == 3);
  CHECK(rig.build.peak <= 2);
  CHECK(rig.judge.peak <= 2);
  CHECK(t.peak_judges <= 2);
  REQUIRE(rig.chat.order.size() == 12);
  // Episodes asked in the order they were added (the loads come back in that order too).
  for (int i = 0; i < 12; ++i)
    CHECK(rig.chat.order[static_cast<std::size_t>(i)] == "t/" + std::to_string(i) + "#0#1");
  CHECK(rig.judge.loads == 12);
}

TEST_CASE("scheduler: identical builds in flight are done once; a failing build is reused too",
          "[scheduler]") {
  Rig rig;
  rig.sc.llm_concurrency = 16;
  rig.build.cost_ms = 2;
  rig.chat.reply = [](const ChatRequest& r) -> Expected<ChatResult> {
    ChatResult c;
    c.status = ChatStatus::ok;
    c.text = r.sample < 4 ? "CODE:good" : "CODE:bad";
    return c;
  };
  Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
  rig.add(s, 1, 8);  // 8 samples of one task: 4 send one source, 4 another
  const RunTally t = s.run();
  CHECK(t.attempts == 8);
  CHECK(rig.build.builds == 2);
  CHECK(rig.build.per_source["good"] == 1);
  CHECK(rig.build.per_source["bad"] == 1);
  CHECK(t.builds_shared == 6);
  CHECK(rig.count(Outcome::pass) == 4);
  CHECK(rig.count(Outcome::compile_error) == 4);
  CHECK(rig.judge.loads == 1);  // one load per task, whatever its samples
}

TEST_CASE("scheduler: a task stays on its slot; an idle slot takes queued work; a failing slot leaves",
          "[scheduler]") {
  Rig rig(2);
  rig.sc.llm_concurrency = 8;
  rig.mc.turns = 3;
  rig.mc.stop_on_pass = false;
  rig.judge.cost_ms = 1;
  rig.chat.reply = [](const ChatRequest& r) -> Expected<ChatResult> {
    ChatResult c;
    c.status = ChatStatus::ok;
    c.text = "CODE:good" + r.task + std::to_string(r.turn);
    return c;
  };
  {
    Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
    rig.add(s, 2);
    const RunTally t = s.run();
    CHECK(t.attempts == 6);
    CHECK(rig.judge.slots_of["t/0"].size() == 1);  // three turns, one slot: affinity
    CHECK(rig.judge.slots_of["t/1"].size() == 1);
    CHECK(rig.judge.jobs_on[0] == 3);
    CHECK(rig.judge.jobs_on[1] == 3);
  }
  Rig bad(2);
  bad.sc.llm_concurrency = 8;
  bad.sc.max_infra_failures = 0;
  bad.judge.failing[0] = true;
  Scheduler s(bad.io, bad.ports(), bad.mc, bad.sc);
  bad.add(s, 10);
  const RunTally t = s.run();
  REQUIRE(t.retired_slots == std::vector<std::string>{"fake:0"});
  CHECK(bad.judge.jobs_on[0] == bad.sc.slot_max_failures);
  CHECK(t.infra_errors == bad.sc.slot_max_failures);
  CHECK(t.passes == 10 - bad.sc.slot_max_failures);
}

TEST_CASE("scheduler: failed loads count against their slot by kind, not by name: a cancelled one does not",
          "[scheduler]") {
  // Both fail with the sub_kind "abandoned": only the typed kind decides (issue 38 §1).
  for (const FailureKind kind : {FailureKind::judge, FailureKind::cancelled}) {
    Rig rig(2);
    rig.sc.llm_concurrency = 8;
    rig.sc.max_infra_failures = 0;
    rig.judge.load_failure = kind;
    Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
    rig.add(s, 10);
    const RunTally t = s.run();
    INFO(to_string(kind));
    CHECK(t.retired_slots.empty() == (kind == FailureKind::cancelled));
  }
}

TEST_CASE("scheduler: an exception inside one episode is its recorded infra_error; the run goes on",
          "[scheduler]") {
  Rig rig;
  rig.render.throw_for = {"t/1"};
  Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
  rig.add(s, 3);
  const RunTally t = s.run();
  CHECK(t.crashes == 1);
  REQUIRE(rig.store.records.size() == 3);
  for (const auto& r : rig.store.records) {
    if (r.task == "t/1") {
      CHECK(r.outcome == Outcome::infra_error);
      CHECK(r.sub_kind == "exception");
    } else {
      CHECK(r.outcome == Outcome::pass);
    }
  }
  CHECK(s.states()[1].phase == Phase::paused);
}

TEST_CASE("scheduler: stop() takes no new turn, drops LLM requests, records the builds and judges in flight",
          "[scheduler]") {
  Rig rig;
  rig.sc.llm_concurrency = 2;
  rig.mc.turns = 3;
  rig.mc.stop_on_pass = false;
  rig.chat.hold = true;
  {
    Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
    rig.add(s, 5);
    // Let the first two requests through, then stop while their builds are in flight: as soon as
    // the two freed LLM slots have sent their next requests (no timing margin to miss on a
    // loaded machine; the builds take far longer than that), or after 2 s whatever happened.
    int released = 0, polls = 0;
    rig.build.cost_ms = 200;
    std::function<void()> stop_when_sent = [&] {
      if (rig.chat.sent >= 4 || ++polls > 20000)
        s.stop();
      else
        test::later(rig.io, 0.1, stop_when_sent);
    };
    // Released once both first requests are held (their tasks' loads come first, through the
    // one judge slot: a fixed delay raced them).
    std::function<void()> release_when_held = [&] {
      if (rig.chat.held.size() < 2 && ++polls <= 20000) return test::later(rig.io, 0.1, release_when_held);
      rig.chat.release();  // two replies come back
      ++released;
      test::later(rig.io, 0, stop_when_sent);
    };
    test::later(rig.io, 0, release_when_held);
    const RunTally t = s.run();
    CHECK(released == 1);
    CHECK(t.interrupted);
    CHECK(rig.chat.sent == 4);             // two answered, two more in flight at the stop, one queued
    CHECK(rig.store.records.size() == 2);  // the two answered attempts were built, judged and recorded
    CHECK(t.abandoned == 3);               // the in-flight and queued requests were dropped
    for (const auto& st : s.states()) CHECK((st.phase == Phase::done || st.phase == Phase::paused));
  }
  // The abandoned requests answer after the scheduler is gone: their completions go nowhere.
  rig.chat.release();
  rig.io.restart();
  rig.io.run();
  CHECK(rig.store.records.size() == 2);
}

TEST_CASE("scheduler: consecutive LLM failures stop the run; a paused episode resumes where it stopped",
          "[scheduler]") {
  Rig rig;
  rig.sc.llm_concurrency = 1;
  rig.sc.max_llm_failures = 2;
  rig.mc.turns = 2;
  rig.mc.stop_on_pass = false;
  rig.chat.reply = [](const ChatRequest&) -> Expected<ChatResult> {
    return Failure{FailureKind::llm, "http_error", "500"};
  };
  test::FakeTasks keep;
  std::vector<prompts::PastAttempt> history;
  {
    Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
    rig.add(s, 4);
    const RunTally t = s.run();
    CHECK(t.llm_down);
    CHECK(t.llm_errors == 2);
    CHECK(rig.store.records.size() == 2);
    CHECK(rig.chat.sent == 3);  // the third was in flight at the stop: abandoned, not recorded
    CHECK(t.abandoned >= 1);    // it (and the fourth, if it was queued already)
    for (const auto& r : rig.store.records) CHECK(r.turn == 1);
    CHECK(s.states()[0].phase == Phase::paused);
  }
  // Resume: the endpoint healed; the paused episode asks turn 1 again and runs to its last turn.
  rig.chat.reply = [](const ChatRequest&) -> Expected<ChatResult> {
    ChatResult c;
    c.status = ChatStatus::ok;
    c.text = "CODE:good";
    return c;
  };
  rig.store.records.clear();
  Scheduler again(rig.io, rig.ports(), rig.mc, rig.sc);
  again.add({rig.tasks.judging[0].get(), 0, 1, 0.0, {}, {}});
  const RunTally t2 = again.run();
  CHECK(t2.attempts == 2);
  REQUIRE(rig.store.records.size() == 2);
  CHECK(rig.store.records[1].turn == 2);
  CHECK(again.states()[0].history.size() == 2);
}

TEST_CASE("scheduler: an unusable task costs no LLM call; a spent token budget ends its episodes",
          "[scheduler]") {
  Rig rig;
  rig.judge.unusable = {"t/0"};
  Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
  rig.add(s, 2, 2);
  const RunTally t = s.run();
  CHECK(t.unusable.count("t/0"));
  CHECK(rig.chat.sent == 2);  // t/1's two samples only
  Rig b;
  b.mc.task_token_budget = 10;  // each reply costs 15 tokens: the three first turns start at 0, no later one
  b.mc.turns = 3;
  b.mc.stop_on_pass = false;
  b.sc.llm_concurrency = 1;
  Scheduler s2(b.io, b.ports(), b.mc, b.sc);
  b.add(s2, 1, 3);
  const RunTally t2 = s2.run();
  CHECK(t2.attempts == 3);
  CHECK(t2.budget_stops == 3);
}

namespace {

/// n given candidates (eval): task t/i's kernel is "good<i>", or "bad<i>" every third.
void add_given(Rig& rig, Scheduler& s, int n) {
  for (int t = 0; t < n; ++t) {
    TaskJudging* tj = rig.tasks.add("t/" + std::to_string(t));
    s.add({tj, 0, 1, 0.0, {}, (t % 3 == 2 ? "bad" : "good") + std::to_string(t)});
  }
}

std::map<std::string, Outcome> outcomes(const std::vector<AttemptRecord>& recs) {
  std::map<std::string, Outcome> m;
  for (const auto& r : recs) m[r.task] = r.outcome;
  return m;
}

}  // namespace

TEST_CASE("scheduler: given candidates (eval --jobs) compile side by side, judged one at a time per slot",
          "[scheduler]") {
  std::map<std::string, Outcome> first;
  for (int jobs : {1, 4}) {
    Rig rig;
    rig.sc.compile_jobs = jobs;
    rig.build.cost_ms = 4;
    rig.judge.cost_ms = 1;
    rig.judge.unusable = {"t/4"};
    Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
    add_given(rig, s, 12);
    const RunTally t = s.run();
    INFO("jobs " << jobs);
    CHECK(t.attempts == 12);
    CHECK(rig.chat.sent == 0);  // no LLM
    CHECK(rig.build.builds == 12);
    CHECK(rig.build.peak == jobs);  // the compiles overlap...
    CHECK(rig.judge.peak == 1);     // ...while the one slot judges one kernel at a time
    CHECK(t.peak_judges == 1);
    CHECK(rig.judge.loads == 12);
    CHECK(t.unusable.count("t/4"));
    const auto got = outcomes(rig.store.records);
    CHECK(got.at("t/0") == Outcome::pass);
    CHECK(got.at("t/2") == Outcome::compile_error);
    CHECK(got.at("t/4") == Outcome::infra_error);
    if (jobs == 1)
      first = got;
    else
      CHECK(got == first);  // the same verdicts whatever the number of compiles at once
  }
}

TEST_CASE("scheduler: stopping an eval drops the kernels not started; those started are recorded whole",
          "[scheduler]") {
  Rig rig;
  rig.sc.compile_jobs = 2;
  rig.build.cost_ms = 3;
  rig.judge.cost_ms = 1;
  Scheduler s(rig.io, rig.ports(), rig.mc, rig.sc);
  add_given(rig, s, 20);
  test::later(rig.io, 8, [&] { s.stop(); });
  const RunTally t = s.run();
  CHECK(t.interrupted);
  CHECK(t.attempts > 0);
  CHECK(t.attempts < 20);
  CHECK(rig.build.builds < 20);  // queued compiles were never started
  CHECK(t.attempts + t.abandoned == 20);
  for (const auto& r : rig.store.records) CHECK(r.outcome != Outcome::infra_error);
}
