// [episode] the episode's pure state machine (agent/episode_machine.hpp): every transition
// driven by hand, without threads, I/O or a clock.
#include <variant>

#include "agent_fakes.hpp"
#include "catch.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/agent/episode_machine.hpp"

using namespace kforge;
using namespace kforge::agent;

namespace {

struct Machine {
  test::FakeTasks tasks;
  MachineConfig cfg;
  EpisodeState s;
  Machine() {
    cfg.turns = 3;
    cfg.extract = test::fake_extract;
    cfg.backend = "cpu";
    cfg.model = "m";
    s.task = tasks.add("t/a");
    s.sample = 1;
  }
  Action go(Event e) { return step(s, e, cfg); }
  /// Begin -> (load) -> Render -> Chat, with the reply `text`.
  Action to_reply(const std::string& text) {
    if (!s.loaded) {
      REQUIRE(std::holds_alternative<LoadTask>(go(Begin{})));
      backends::LoadResult lr;
      REQUIRE(std::holds_alternative<Continue>(go(Loaded{{}, lr})));
    }
    REQUIRE(std::holds_alternative<Render>(go(Begin{})));
    auto chat = go(Rendered{{}, {"sys", "user"}});
    REQUIRE(std::holds_alternative<Chat>(chat));
    ChatResult r;
    r.status = ChatStatus::ok;
    r.text = text;
    return go(ChatDone{{}, r});
  }
};

backends::Evaluation compiled(const std::string& src) {
  backends::Evaluation ev;
  ev.compile.status = backends::CompileStatus::ok;
  ev.compile.artifact = src;
  return ev;
}

}  // namespace

TEST_CASE("episode machine: a pass ends the episode under stop_on_pass, with its record", "[episode]") {
  Machine m;
  auto build = m.to_reply("CODE:good");
  REQUIRE(std::holds_alternative<Build>(build));
  CHECK(std::get<Build>(build).source == "good");
  auto judge = m.go(Built{{}, compiled("good")});
  REQUIRE(std::holds_alternative<Judge>(judge));
  CHECK(std::get<Judge>(judge).needs_runner);
  Judged j;
  j.rec = m.s.rec;
  j.rec.outcome = Outcome::pass;
  REQUIRE(std::holds_alternative<Record>(m.go(JudgeDone{{"t", 10}, j})));
  CHECK(m.s.rec.task == "t/a");
  CHECK(m.s.rec.sample == 1);
  CHECK(m.s.rec.turn == 1);
  CHECK(m.s.files.files.count("kernel.cpp"));
  CHECK(m.s.files.files.count("prompt.md"));
  CHECK(m.s.files.result["outcome"] == "pass");
  auto stop = m.go(Recorded{});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK(!std::get<Stop>(stop).paused);
  CHECK(std::get<Stop>(stop).why == "pass");
  CHECK(m.s.phase == Phase::done);
  CHECK(m.s.history.size() == 1);
}

TEST_CASE("episode machine: a reply without code is format_error and the next turn sees it", "[episode]") {
  Machine m;
  REQUIRE(std::holds_alternative<Record>(m.to_reply("no code")));
  CHECK(m.s.rec.outcome == Outcome::format_error);
  CHECK(m.s.rec.sub_kind == "no_code_block");
  REQUIRE(std::holds_alternative<Continue>(m.go(Recorded{})));
  CHECK(m.s.turn == 2);
  CHECK(m.s.history.size() == 1);
  REQUIRE(std::holds_alternative<Render>(m.go(Begin{})));
  CHECK(m.s.rec.turn == 2);
}

TEST_CASE("episode machine: an LLM failure is llm_error and pauses; a compile error settles without a runner",
          "[episode]") {
  Machine m;
  m.go(Begin{});
  backends::LoadResult lr;
  m.go(Loaded{{}, lr});
  m.go(Begin{});
  m.go(Rendered{{}, {"s", "u"}});
  REQUIRE(std::holds_alternative<Record>(m.go(ChatDone{{}, Failure{FailureKind::llm, "timeout", "slow"}})));
  CHECK(m.s.rec.outcome == Outcome::llm_error);
  CHECK(m.s.rec.sub_kind == "timeout");
  CHECK(m.s.files.result["in_history"] == false);
  auto stop = m.go(Recorded{});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK(std::get<Stop>(stop).paused);
  CHECK(m.s.history.empty());

  Machine c;
  REQUIRE(std::holds_alternative<Build>(c.to_reply("CODE:bad")));
  backends::Evaluation ev;
  ev.compile.status = backends::CompileStatus::compile_error;
  ev.outcome = Outcome::compile_error;
  auto judge = c.go(Built{{}, ev});
  REQUIRE(std::holds_alternative<Judge>(judge));
  CHECK(!std::get<Judge>(judge).needs_runner);
}

TEST_CASE("episode machine: kforge's failures are infra_error, never in the history; limits end it",
          "[episode]") {
  Machine m;
  REQUIRE(std::holds_alternative<Build>(m.to_reply("CODE:x")));
  REQUIRE(std::holds_alternative<Record>(
      m.go(Built{{}, Failure{FailureKind::toolchain, "toolchain_missing", "no g++"}})));
  CHECK(m.s.rec.outcome == Outcome::infra_error);
  CHECK(m.s.rec.sub_kind == "toolchain_missing");
  CHECK(std::get<Stop>(m.go(Recorded{})).paused);
  CHECK(m.s.history.empty());

  Machine b;  // the task's token budget is spent: no new turn
  b.cfg.task_token_budget = 100;
  b.go(Begin{});
  backends::LoadResult lr;
  b.go(Loaded{{}, lr});
  auto stop = b.go(Begin{{}, 100, false});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK(std::get<Stop>(stop).why == "token_budget");

  Machine s;  // the run is stopping
  CHECK(std::get<Stop>(s.go(Begin{{}, 0, true})).why == "stopped");

  Machine u;  // the reference does not load: unusable, no LLM call
  u.go(Begin{});
  const Failure bad{FailureKind::reference, "unjudgeable", "unjudgeable: random output"};
  auto st = u.go(Loaded{{}, bad});
  REQUIRE(std::holds_alternative<Stop>(st));
  CHECK(std::get<Stop>(st).why == "unusable: unjudgeable: random output");
}

TEST_CASE("episode machine: a crash mid-attempt is a recorded infra_error; unexpected events are driver bugs",
          "[episode]") {
  Machine m;
  REQUIRE(std::holds_alternative<Build>(m.to_reply("CODE:x")));
  REQUIRE(
      std::holds_alternative<Record>(m.go(Crashed{{}, Failure{FailureKind::internal, "exception", "boom"}})));
  CHECK(m.s.rec.outcome == Outcome::infra_error);
  CHECK(m.s.rec.sub_kind == "exception");
  CHECK(m.s.rec.turn == 1);
  CHECK(std::get<Stop>(m.go(Recorded{})).paused);

  Machine e;
  CHECK_THROWS_AS(e.go(Recorded{}), std::logic_error);
}

TEST_CASE("episode machine: the last turn ends the episode", "[episode]") {
  Machine m;
  m.cfg.turns = 2;
  m.to_reply("nothing");
  CHECK(std::holds_alternative<Continue>(m.go(Recorded{})));
  m.to_reply("nothing");
  m.go(Recorded{});
  auto stop = m.go(Begin{});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK(std::get<Stop>(stop).why == "turns");
  CHECK(m.s.history.size() == 2);
}

TEST_CASE("episode machine: a given candidate is built, then its task loaded, judged and recorded once",
          "[episode]") {
  Machine m;
  m.s.given = "good";
  auto build = m.go(Begin{{"t", 1}});  // no load first, no prompt, no LLM
  REQUIRE(std::holds_alternative<Build>(build));
  CHECK(std::get<Build>(build).source == "good");
  CHECK(!m.s.rec.source_sha.empty());
  REQUIRE(std::holds_alternative<LoadTask>(m.go(Built{{}, compiled("good")})));
  backends::LoadResult lr;
  auto judge = m.go(Loaded{{}, lr});
  REQUIRE(std::holds_alternative<Judge>(judge));
  CHECK(std::get<Judge>(judge).ev.compile.artifact == "good");
  Judged j;
  j.rec = m.s.rec;
  j.rec.outcome = Outcome::output_mismatch;
  j.detail = "short feedback";
  j.message = "the whole message";
  REQUIRE(std::holds_alternative<Record>(m.go(JudgeDone{{"t", 5}, j})));
  CHECK(m.s.files.result["message"] == "the whole message");  // eval's result.json: the full text
  CHECK_FALSE(m.s.files.result.contains("llm_status"));
  CHECK_FALSE(m.s.files.files.count("prompt.md"));
  auto stop = m.go(Recorded{});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK(std::get<Stop>(stop).why == "judged");  // one attempt, whatever the turns
  CHECK(m.s.phase == Phase::done);
}

TEST_CASE("episode machine: a given candidate whose reference does not load is recorded once as unusable",
          "[episode]") {
  Machine m;
  m.s.given = "good";
  REQUIRE(std::holds_alternative<Build>(m.go(Begin{})));
  REQUIRE(std::holds_alternative<LoadTask>(m.go(Built{{}, compiled("good")})));
  const Failure lr{FailureKind::reference, "reference_failed",
                   "Traceback (most recent call last):\n  File \"x\"\nRuntimeError: broken reference"};
  REQUIRE(std::holds_alternative<Record>(m.go(Loaded{{}, lr})));
  CHECK(m.s.rec.outcome == Outcome::infra_error);
  CHECK(m.s.rec.sub_kind == "reference_failed");
  REQUIRE(m.s.rec.failure.has_value());
  CHECK(*m.s.rec.failure == FailureKind::reference);  // typed where it happened, never from the text
  CHECK(m.s.rec.message == "the reference did not load: RuntimeError: broken reference");
  CHECK(m.s.files.result["traceback"] == lr.message);
  auto stop = m.go(Recorded{});
  REQUIRE(std::holds_alternative<Stop>(stop));
  CHECK_FALSE(std::get<Stop>(stop).paused);
  CHECK(std::get<Stop>(stop).why == "unusable: the reference did not load: RuntimeError: broken reference");
}

TEST_CASE("episode machine: ncu runs on a pass that improves the episode's best, or on every pass when asked",
          "[episode]") {
  for (bool every : {false, true}) {
    Machine m;
    m.cfg.stop_on_pass = false;
    m.cfg.profile_every_pass = every;
    auto turn = [&](double speedup) {
      auto judge = m.go(Built{{}, compiled("good")});
      REQUIRE(std::holds_alternative<Judge>(judge));
      const DeepProfile deep = std::get<Judge>(judge).deep;
      Judged j;
      j.rec = m.s.rec;
      j.rec.outcome = Outcome::pass;
      j.rec.speedup = speedup;
      REQUIRE(std::holds_alternative<Record>(m.go(JudgeDone{{}, j})));
      REQUIRE(std::holds_alternative<Continue>(m.go(Recorded{})));
      return std::pair{deep, j.rec};
    };
    REQUIRE(std::holds_alternative<Build>(m.to_reply("CODE:good")));
    auto [d1, r1] = turn(2.0);
    CHECK(d1.every_pass == every);
    CHECK_FALSE(d1.best);  // no pass yet: the first pass is profiled
    CHECK(wants_deep_profile(r1, d1));
    REQUIRE(std::holds_alternative<Build>(m.to_reply("CODE:good")));
    auto [d2, r2] = turn(1.5);
    REQUIRE(d2.best);
    CHECK(*d2.best == 2.0);
    CHECK(wants_deep_profile(r2, d2) == every);  // slower than the best: basic unless every pass
    REQUIRE(std::holds_alternative<Build>(m.to_reply("CODE:good")));
    auto [d3, r3] = turn(3.0);
    CHECK(*d3.best == 2.0);
    CHECK(wants_deep_profile(r3, d3));  // an improvement
    CHECK(*m.s.best_speedup == 3.0);
  }
}

TEST_CASE("attempt: which passes get the deep profile; a speedup not credited never improves the best",
          "[attempt]") {
  AttemptRecord pass;
  pass.outcome = Outcome::pass;
  pass.speedup = 1.2;
  const DeepProfile improving{false, 1.0};
  CHECK(wants_deep_profile(pass, improving));
  CHECK_FALSE(wants_deep_profile(pass, DeepProfile{false, 1.2}));  // equal is no improvement
  CHECK(wants_deep_profile(pass, DeepProfile{true, 5.0}));         // every pass
  CHECK(wants_deep_profile(pass, DeepProfile{false, std::nullopt}));
  AttemptRecord anomaly = pass;
  anomaly.speedup = 50;
  anomaly.timing_anomaly = "below the speed of light";
  CHECK(credited_speedup(anomaly) == 0);
  CHECK_FALSE(wants_deep_profile(anomaly, improving));
  AttemptRecord low = pass;
  low.speedup = 9;
  low.precision_disallowed = true;
  CHECK_FALSE(wants_deep_profile(low, improving));
  AttemptRecord mismatch;
  mismatch.outcome = Outcome::output_mismatch;  // left to ProfileStep::failing
  CHECK(wants_deep_profile(mismatch, improving));
  CHECK(credited_speedup(mismatch) == 0);
}
