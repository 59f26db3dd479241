// tests/unit/test_run_options.cpp — `kforge run`'s one option table (run_options.hpp): the CLI,
// the manifest and --resume all derive from it.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <set>

#include "catch.hpp"
#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/run_checks.hpp"
#include "kforge/agent/run_options.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"

using namespace kforge::agent;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// `kforge run ARGS` parsed as the CLI does: the command and what it gave.
RunCommand parse(const std::vector<std::string>& args) {
  RunCommand cmd;
  CLI::App app;
  add_run_options(app, cmd);
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes them last first
  app.parse(rev);
  cmd.given = given_run_options(app);
  return cmd;
}

std::vector<std::string> cli_args(const RunOption& o) {
  const std::string flag = o.flag[0] == '!' ? o.flag.substr(1) : o.flag;
  if (o.example.empty()) return {flag};
  return {flag, o.example};
}

/// A resume of `config` with `args` on the command line (--resume given, as the CLI has it).
std::pair<RunCommand, std::optional<ResumeError>> resume(const json& config, std::vector<std::string> args) {
  args.insert(args.begin(), {"--resume", "/tmp/run"});
  RunCommand cmd = parse(args);
  auto err = resume_run_config(config, cmd);
  return {cmd, err};
}

}  // namespace

TEST_CASE("run options: one table, unique flags and keys, every `kforge run` option from it",
          "[run_options]") {
  std::set<std::string> flags, keys;
  for (const auto& o : run_options()) {
    INFO(o.flag);
    CHECK(flags.insert(o.flag).second);
    CHECK(keys.insert(o.key).second);
    CHECK_FALSE(o.help.empty());
    CHECK(bool(o.write) == (o.rule != ResumeRule::not_recorded));
    CHECK(bool(o.read) == (o.rule != ResumeRule::not_recorded));
    CHECK(run_option_rules().contains(o.key) == (o.rule != ResumeRule::not_recorded));  // for kforge merge
  }
  RunCommand cmd;
  CLI::App app;
  add_run_options(app, cmd);
  // Every option on the command line is a row of the table (help aside): there is no other
  // place to declare one.
  std::size_t declared = 0;
  for (const CLI::Option* o : app.get_options())
    if (o->get_name() != "--help") ++declared;
  CHECK(declared == run_options().size());
}

TEST_CASE("eval options: the ones eval shares with run are the table's rows, declared once",
          "[run_options]") {
  RunCommand shared;
  CLI::App eval;
  add_eval_options(eval, shared);
  std::set<std::string> table_keys;
  for (const auto& o : run_options()) table_keys.insert(o.key);
  for (const auto& key : eval_option_keys()) {
    INFO(key);
    CHECK(table_keys.count(key) == 1);
  }
  // Each declared option is the table's: the same flag and help as run's.
  std::size_t declared = 0;
  for (const CLI::Option* opt : eval.get_options()) {
    if (opt->get_name() == "--help") continue;
    ++declared;
    bool found = false;
    for (const auto& o : run_options())
      if ((o.flag[0] == '!' ? o.flag.substr(1) : o.flag) == opt->get_name()) {
        found = true;
        CHECK(opt->get_description() == o.help);
      }
    CHECK(found);
  }
  CHECK(declared == eval_option_keys().size());
  // Parsed values reach eval's command.
  std::vector<std::string> args = {"--suite",    "kforge-core", "--trials",  "2",           "--no-bench",
                                   "--baseline", "compile",     "--devices", "cpu,cpu",     "--profile",
                                   "ci",         "--reps",      "7",         "--allow-ops", "mm,bmm"};
  std::vector<std::string> rev(args.rbegin(), args.rend());
  eval.parse(rev);
  EvalCommand ev;
  copy_eval_options(shared, ev);
  CHECK(ev.suite == "kforge-core");
  CHECK(ev.trials == 2);
  CHECK_FALSE(ev.bench);
  CHECK(ev.baseline == "compile");
  CHECK(ev.devices == std::vector<std::string>{"cpu", "cpu"});
  CHECK(ev.profile == "ci");
  CHECK(ev.reps == 7);
  CHECK(ev.allow_ops == std::vector<std::string>{"mm", "bmm"});
  CHECK(ev.profiler == "auto");  // the table's default, as before
  // --suite stays required.
  CLI::App bare;
  RunCommand s2;
  add_eval_options(bare, s2);
  CHECK_THROWS(bare.parse(std::vector<std::string>{}));
}

TEST_CASE("eval options: an existing --out by the table's rules", "[run_options]") {
  const json was = {
      {"command", "eval"},
      {"config", {{"reps", 100}, {"baseline", "eager"}, {"devices", {"cpu"}}, {"profile", "ci"}}}};
  // A free option (devices) may change; a result-changing one (reps, baseline) may not.
  CHECK_FALSE(eval_resume_problem(was, {{"reps", 100}, {"devices", {"cpu", "cpu"}}, {"profile", "ci"}}));
  auto reps = eval_resume_problem(was, {{"reps", 5}});
  REQUIRE(reps);
  CHECK(reps->rfind("--reps: this eval says 5, the directory's results were judged with 100", 0) == 0);
  auto base = eval_resume_problem(was, {{"baseline", "compile"}});
  REQUIRE(base);
  CHECK(base->rfind("--baseline: ", 0) == 0);
  auto run = eval_resume_problem({{"command", "run"}, {"config", json::object()}}, {{"reps", 100}});
  REQUIRE(run);
  CHECK(run->find("`kforge run` directory") != std::string::npos);
}

TEST_CASE("run options: every option round-trips CLI -> manifest -> resume", "[run_options]") {
  const RunCommand defaults;
  for (const auto& o : run_options()) {
    INFO(o.flag << " " << o.example);
    const RunCommand given = parse(cli_args(o));
    CHECK(given.given == std::set<std::string>{o.key});
    REQUIRE(o.value(given) != o.value(defaults));  // the example is not the default
    const json config = run_config_json(given, {});
    if (o.rule == ResumeRule::not_recorded) {
      CHECK_FALSE(config.contains(o.key));
      continue;
    }
    REQUIRE(config.contains(o.key));
    // A bare resume restores it ...
    auto [bare, err] = resume(config, {});
    REQUIRE_FALSE(err);
    CHECK(o.value(bare) == o.value(given));
    // ... and the manifest it writes again records the same value.
    CHECK(run_config_json(bare, {})[o.key] == config[o.key]);
    // The same value given again is no conflict, whatever the rule.
    auto [again, err2] = resume(config, cli_args(o));
    CHECK_FALSE(err2);
    CHECK(o.value(again) == o.value(given));
  }
}

TEST_CASE("run options: a resume refuses a value that changes results, naming the option", "[run_options]") {
  const json recorded = run_config_json(RunCommand{}, {});  // a run made with the defaults
  int same = 0, free = 0;
  for (const auto& o : run_options()) {
    if (o.rule == ResumeRule::not_recorded) continue;
    INFO(o.flag << " " << o.example);
    auto [cmd, err] = resume(recorded, cli_args(o));
    const std::string flag = o.flag[0] == '!' ? o.flag.substr(1) : o.flag;
    if (o.rule == ResumeRule::same) {
      ++same;
      REQUIRE(err);
      CHECK(err->kind == ResumeError::Kind::conflict);
      CHECK(err->option == flag);
      CHECK(err->message.find(flag) != std::string::npos);
      CHECK(err->message.find("config." + o.key) != std::string::npos);
    } else {  // free: the command line wins; grow: the example raises it
      ++free;
      REQUIRE_FALSE(err);
      CHECK(o.value(cmd) == o.value(parse(cli_args(o))));
    }
  }
  CHECK(same > 10);
  CHECK(free > 5);
}

TEST_CASE("run options: --samples and --turns may rise on a resume, never fall", "[run_options]") {
  const json recorded = run_config_json(parse({"--turns", "3", "--samples", "4"}), {});
  auto [up, e1] = resume(recorded, {"--turns", "5"});
  CHECK_FALSE(e1);
  CHECK(up.turns == 5);
  CHECK(up.samples == 4);
  auto [down, e2] = resume(recorded, {"--samples", "2"});
  REQUIRE(e2);
  CHECK(e2->option == "--samples");
  CHECK(e2->message.find("--samples 2 is below the run's recorded 4") != std::string::npos);
}

TEST_CASE("run options: a manifest of the old format resumes", "[run_options]") {
  // config as `kforge run` wrote it before the table: a scalar temperature, profile "default",
  // null prices, no shard, perf_inputs, llm_concurrency, compile_jobs or print_report.
  const json old = json::parse(R"({
    "suite": "kforge-core", "suite_root": "/nonexistent/benchmarks/suites/kforge-core", "backend": "cpu",
    "llm": "openai:scripted", "base_url": "http://127.0.0.1:1234", "api_key_env": "", "samples": 2, "turns": 3,
    "stop_on": "never", "exemplar": "category", "history": "all", "profile": "default", "only": "activation/",
    "tasks": [], "max_tasks": 3, "temperature": 0.8, "top_p": 0.95, "max_tokens": 2048, "reasoning_effort": "",
    "seed": 11, "token_budget": 5000, "task_token_budget": 0, "max_llm_failures": 10, "max_infra_failures": 5,
    "llm_timeout_ms": 300000, "llm_retries": 5, "trials": 2, "allow_precision": ["tf32"], "allow_ops": [],
    "bench": false, "reps": 100, "device": "", "devices": [], "profiler": "basic", "profile_failing": false,
    "profile_every_pass": false, "price_input_per_mtok": null, "price_output_per_mtok": 3.0})");
  auto [cmd, err] = resume(old, {"--llm-concurrency", "2"});
  REQUIRE_FALSE(err);
  CHECK(cmd.suite == "kforge-core");  // the recorded root is gone: the name
  CHECK(cmd.samples == 2);
  CHECK(cmd.turns == 3);
  CHECK(cmd.stop_on == "never");
  CHECK(cmd.profile.empty());
  CHECK(cmd.temperatures == std::vector<double>{0.8});
  CHECK(cmd.shard == kforge::Shard{});
  CHECK_FALSE(cmd.price_input_per_mtok);
  CHECK(cmd.price_output_per_mtok == 3.0);
  CHECK(cmd.allow_precision == std::vector<std::string>{"tf32"});
  CHECK_FALSE(cmd.bench);
  CHECK(cmd.trials == 2);
  CHECK(cmd.seed == 11);
  CHECK(cmd.llm_concurrency == 2);  // given; the old manifest has none
  CHECK(cmd.perf_inputs == 0);      // not recorded then: the default
  // Given the same temperature in the new form: no conflict; another: refused.
  CHECK_FALSE(resume(old, {"--temperature", "0.8"}).second);
  auto refused = resume(old, {"--temperature", "0.8,0"}).second;
  REQUIRE(refused);
  CHECK(refused->option == "--temperature");
  // A recorded value of the wrong type is an error naming the field.
  json bad = old;
  bad["trials"] = "two";
  auto e = resume(bad, {}).second;
  REQUIRE(e);
  CHECK(e->kind == ResumeError::Kind::bad_value);
  CHECK(e->message.find("config.trials") != std::string::npos);
}

TEST_CASE("kforge run --resume refuses a conflicting option before starting anything (exit 2)", "[cli]") {
  const fs::path dir = scratch("cli_resume_conflict");
  json config = run_config_json(parse({"--suite", "kforge-core", "--llm", "openai:m", "--trials", "2"}), {});
  { kforge::RunDir::create(dir / "run", {{"command", "run"}, {"config", config}}); }
  auto r = kforge::test::run_kforge({"run", "--resume", (dir / "run").string(), "--trials", "3"}, dir);
  CHECK(r.code == 2);
  CHECK(r.err.find("--trials") != std::string::npos);
  CHECK(r.err.find("config.trials") != std::string::npos);
}
