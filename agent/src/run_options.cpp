// agent/src/run_options.cpp — the options of `kforge run`, declared once (run_options.hpp).
#include "kforge/agent/run_options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <type_traits>

#include "kforge/agent/runners.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/benchmarks/task.hpp"

namespace kforge::agent {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Tune = std::function<void(CLI::Option*)>;
using R = ResumeRule;

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

template <class T>
json to_value(const T& v) {
  return json(v);
}
json to_value(const fs::path& p) {
  return p.string();
}
json to_value(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

template <class T>
void from_value(const json& j, T& out) {
  j.get_to(out);
}
/// A list option recorded as one value (manifests from before lists: "temperature": 0.8).
template <class T>
void from_value(const json& j, std::vector<T>& out) {
  if (j.is_array())
    j.get_to(out);
  else
    out = {j.get<T>()};
}
void from_value(const json& j, std::optional<double>& out) {
  out = j.is_null() ? std::nullopt : std::optional<double>(j.get<double>());
}

/// Reads config[key] with `read_value`; a wrong type is an error naming config.<key>.
template <class F>
void read_key(const json& config, const std::string& key, F&& read_value) {
  try {
    read_value(config.at(key));
  } catch (const json::exception& e) {
    throw std::runtime_error("config." + key + ": " + config.at(key).dump() + ": " + e.what());
  }
}

/// A row for an option bound to one RunCommand field, recorded as the field's JSON value. A
/// bool is a flag, a list takes comma-separated values.
template <class T>
RunOption field(std::string flag, std::string key, T RunCommand::*f, R rule, std::string example,
                std::string help, Tune tune = {}) {
  RunOption o{flag, key, rule, std::move(example), std::move(help), {}, {}, {}, {}};
  o.add = [flag, help = o.help, f, tune](CLI::App& app, RunCommand& cmd) {
    CLI::Option* opt = nullptr;
    if constexpr (std::is_same_v<T, bool>)
      opt = app.add_flag(flag, cmd.*f, help);
    else
      opt = app.add_option(flag, cmd.*f, help);
    if constexpr (is_vector<T>::value) opt->delimiter(',');
    if (tune) tune(opt);
    return opt;
  };
  o.value = [f](const RunCommand& c) { return to_value(c.*f); };
  if (rule == R::not_recorded) return o;
  o.write = [key, f](const RunCommand& c, const RunFacts&, json& config) { config[key] = to_value(c.*f); };
  o.read = [key, f](const json& config, RunCommand& c) {
    read_key(config, key, [&](const json& v) { from_value(v, c.*f); });
  };
  return o;
}

Tune range(double lo, double hi) {
  return [lo, hi](CLI::Option* o) { o->check(CLI::Range(lo, hi)); };
}
Tune one_of(std::vector<std::string> names) {
  return [names = std::move(names)](CLI::Option* o) { o->check(CLI::IsMember(names)); };
}
Tune non_negative() {
  return [](CLI::Option* o) { o->check(CLI::NonNegativeNumber); };
}

/// The suite: compared by the name it loads as (a moved checkout is the same suite); recorded
/// as its name and root; restored from the root where it still exists, else from the name.
std::string suite_name_of(const std::string& arg) {
  if (arg.empty()) return arg;
  try {
    return load_suite(resolve_suite(arg)).name;
  } catch (const std::exception&) {
    return arg;
  }
}
RunOption suite_option() {
  RunOption o =
      field("--suite", "suite", &RunCommand::suite, R::same, "kforge-core", "suite name or directory");
  o.value = [](const RunCommand& c) { return json(suite_name_of(c.suite)); };
  o.write = [](const RunCommand& c, const RunFacts& f, json& config) {
    config["suite"] = f.suite_name.empty() ? c.suite : f.suite_name;
    config["suite_root"] = f.suite_root.empty() ? c.suite : f.suite_root;
  };
  o.read = [](const json& config, RunCommand& c) {
    std::error_code ec;
    if (config.contains("suite_root") && config["suite_root"].is_string() &&
        fs::exists(config["suite_root"].get<std::string>(), ec))
      c.suite = config["suite_root"].get<std::string>();
    else
      read_key(config, "suite", [&](const json& v) { c.suite = v.get<std::string>(); });
  };
  return o;
}

/// --shard K/N, recorded as "K/N".
RunOption shard_option() {
  RunOption o{
      "--shard",
      "shard",
      R::same,
      "1/3",
      "K/N: run only the (task, sample) episodes of shard K of N (by a stable hash of the key); merge "
      "the shards' runs with `kforge merge`",
      {},
      {},
      {},
      {}};
  o.add = [help = o.help](CLI::App& app, RunCommand& cmd) {
    return app
        .add_option_function<std::string>(
            "--shard", [&cmd](const std::string& v) { cmd.shard = *parse_shard(v); }, help)
        ->check(
            [](const std::string& v) { return parse_shard(v) ? std::string() : "expected K/N, 0 <= K < N"; });
  };
  o.value = [](const RunCommand& c) { return json(to_string(c.shard)); };
  o.write = [](const RunCommand& c, const RunFacts&, json& config) { config["shard"] = to_string(c.shard); };
  o.read = [](const json& config, RunCommand& c) {
    auto s = config["shard"].is_string() ? parse_shard(config["shard"].get<std::string>()) : std::nullopt;
    if (!s) throw std::runtime_error("config.shard: " + config["shard"].dump() + " is not K/N");
    c.shard = *s;
  };
  return o;
}

/// --profile: manifests of old runs may say "default" for the task's own shapes ("").
RunOption profile_option() {
  RunOption o = field("--profile", "profile", &RunCommand::profile, R::same, "ci", "shape profile (e.g. ci)");
  o.read = [](const json& config, RunCommand& c) {
    read_key(config, "profile", [&](const json& v) { c.profile = v.get<std::string>(); });
    if (c.profile == "default") c.profile.clear();
  };
  return o;
}

Tune backend_names() {
  return [](CLI::Option* o) { o->check(CLI::IsMember(backends::backend_names())); };
}
std::string backend_help() {
  std::string names;
  for (const auto& n : backends::backend_names()) names += (names.empty() ? "" : ", ") + n;
  return "kernel backend: " + names;
}

using RC = RunCommand;

/// The table. One line per option: flag, manifest key, field, resume rule, an example value, help.
std::vector<RunOption> make_table() {
  return {
      suite_option(),
      field("--backend", "backend", &RC::backend, R::same, "cuda", backend_help(), backend_names()),
      field("--llm", "llm", &RC::llm, R::same, "openai:m",
            "PROVIDER:MODEL (openai:..., anthropic:..., replay:RUN_DIR, scripted:FILE: an offline model)"),
      field("--base-url", "base_url", &RC::base_url, R::free, "http://127.0.0.1:9",
            "OpenAI/Anthropic-compatible endpoint"),
      field("--api-key-env", "api_key_env", &RC::api_key_env, R::free, "KFORGE_KEY",
            "environment variable holding the API key"),
      field("--samples", "samples", &RC::samples, R::grow, "3", "samples (independent episodes) per task",
            range(1, 1000)),
      field("--turns", "turns", &RC::turns, R::grow, "4", "turns per episode", range(1, 100)),
      field("--stop-on", "stop_on", &RC::stop_on, R::same, "never", "pass or never",
            one_of({"pass", "never"})),
      field("--exemplar", "exemplar", &RC::exemplar, R::same, "bm25", "none, add, category, bm25 or library",
            one_of({"none", "add", "category", "bm25", "library"})),
      field("--history", "history", &RC::history, R::same, "all", "last or all", one_of({"last", "all"})),
      profile_option(),
      field("--out", "out", &RC::out, R::not_recorded, "/tmp/kforge-run", "run directory to create"),
      field("--resume", "resume", &RC::resume, R::not_recorded, "/tmp/kforge-run",
            "continue the run in this directory"),
      field("--only", "only", &RC::only, R::same, "gelu", "only task ids containing this text"),
      field("--tasks", "tasks", &RC::tasks, R::same, "a,b", "only these task ids (comma-separated)"),
      field("--max-tasks", "max_tasks", &RC::max_tasks, R::same, "2", "at most this many tasks"),
      shard_option(),
      field("--temperature", "temperature", &RC::temperatures, R::same, "0,0.8",
            "sampling temperature, or one per sample (comma-separated; the last repeats): 0,0.8"),
      field("--top-p", "top_p", &RC::top_p, R::same, "0.9", "nucleus sampling top_p", range(0.0, 1.0)),
      field("--max-tokens", "max_tokens", &RC::max_tokens, R::same, "1000", "completion tokens per reply",
            range(1, 1 << 24)),
      field("--reasoning-effort", "reasoning_effort", &RC::reasoning_effort, R::same, "high",
            "reasoning models: low, medium, high (anthropic: or a thinking-token budget)"),
      field("--seed", "seed", &RC::seed, R::same, "7",
            "request seed = SEED + sample (openai-compatible servers)"),
      field("--price-in", "price_input_per_mtok", &RC::price_input_per_mtok, R::free, "2.5",
            "USD per 1M prompt tokens (cost is recorded)", non_negative()),
      field("--price-out", "price_output_per_mtok", &RC::price_output_per_mtok, R::free, "10",
            "USD per 1M completion tokens", non_negative()),
      field("--token-budget", "token_budget", &RC::token_budget, R::same, "3000",
            "history tokens in a prompt (~4 chars each)"),
      field("--task-token-budget", "task_token_budget", &RC::task_token_budget, R::same, "50000",
            "LLM tokens (prompt + completion) per task over all its samples and turns; no new turn starts "
            "once spent (0: no limit)"),
      field("--max-llm-failures", "max_llm_failures", &RC::max_llm_failures, R::free, "3",
            "consecutive LLM failures (after retries) that stop the run, exit 75 (0: never)"),
      field("--max-infra-failures", "max_infra_failures", &RC::max_infra_failures, R::free, "2",
            "consecutive infrastructure failures (toolchain, runner, reference) that stop the run, exit 76 "
            "(0: never)"),
      field("--llm-concurrency", "llm_concurrency", &RC::llm_concurrency, R::free, "112",
            "in-flight LLM requests (no thread is held per request)", range(1, 4096)),
      field("--compile-jobs", "compile_jobs", &RC::compile_jobs, R::free, "3",
            "concurrent compiles (default: cores)"),
      field("--llm-timeout-ms", "llm_timeout_ms", &RC::llm_timeout_ms, R::free, "1000",
            "per-request LLM timeout"),
      field("--llm-retries", "llm_retries", &RC::llm_retries, R::free, "1", "retries after 429/5xx/timeouts"),
      field("--trials", "trials", &RC::trials, R::same, "2", "correctness trials", range(1, 100)),
      field("--reps", "reps", &RC::reps, R::same, "50", "timed repetitions at most", range(1, 100000)),
      field("--perf-inputs", "perf_inputs", &RC::perf_inputs, R::same, "3",
            "TritonBench: performance inputs timed per task, spread evenly (default 0: all)", range(0, 1000)),
      field("!--no-bench", "bench", &RC::bench, R::same, "", "skip timing"),
      field("--baseline", "baseline", &RC::baseline, R::same, "compile",
            "eager, or compile to also time torch.compile", one_of({"eager", "compile"})),
      field("--device", "device", &RC::device, R::free, "cuda:1", "runner device: cpu or cuda:N"),
      field("--devices", "devices", &RC::devices, R::free, "cpu,cpu",
            kDevicesHelp),  // eval's too (runners.hpp)
      field("--profiler", "profiler", &RC::profiler, R::same, "basic",
            "none, basic (timing, roofline, compile-time resources) or ncu (basic plus Nsight Compute "
            "metrics); "
            "default: ncu where it works, else basic",
            one_of({"auto", "none", "basic", "ncu"})),
      field("--profile-failing", "profile_failing", &RC::profile_failing, R::free, "",
            "run the ncu profile for attempts that run but fail the check (output_mismatch) too: recorded, "
            "not fed back"),
      field("--profile-every-pass", "profile_every_pass", &RC::profile_every_pass, R::same, "",
            "run the ncu profile on every pass (default: only on a pass that improves its episode's best "
            "speedup; other "
            "passes get the basic profile)"),
      field("--allow-ops", "allow_ops", &RC::allow_ops, R::same, "mm,bmm",
            "(triton) ATen ops a candidate may run besides allocation, views and copies, e.g. mm "
            "(comma-separated)"),
      field("--allow-precision", "allow_precision", &RC::allow_precision, R::same, "tf32,bf16",
            "lower-precision math to credit on tasks of higher dtype: tf32, fp16, bf16 (comma-separated)",
            one_of({"tf32", "fp16", "bf16"})),
      field("!--no-print-report", "print_report", &RC::print_report, R::free, "",
            "do not print report.md at the end"),
  };
}

/// The long name CLI11 knows the option by ("!--no-bench": "--no-bench").
std::string cli_name(const std::string& flag) {
  return flag[0] == '!' ? flag.substr(1) : flag;
}

/// How a value reads in a message: strings bare, lists comma-separated.
std::string shown(const json& v) {
  if (v.is_string()) return v.get<std::string>().empty() ? "\"\"" : v.get<std::string>();
  if (!v.is_array()) return v.dump();
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + shown(x);
  return s;
}

/// A given option against the recorded one: the refusal when the rule forbids the change.
std::optional<ResumeError> check_given(const RunOption& o, const json& config, const RunCommand& cmd) {
  if (o.rule != R::same && o.rule != R::grow) return std::nullopt;
  RunCommand recorded = cmd;
  o.read(config, recorded);
  const json was = o.value(recorded), now = o.value(cmd);
  if (was == now) return std::nullopt;
  const std::string flag = cli_name(o.flag);
  if (o.rule == R::grow) {
    if (now.is_number() && was.is_number() && now.get<double>() > was.get<double>()) return std::nullopt;
    return ResumeError{ResumeError::Kind::conflict, flag,
                       flag + " " + shown(now) + " is below the run's recorded " + shown(was) + " (config." +
                           o.key + "): a resume may raise it, not lower it"};
  }
  return ResumeError{ResumeError::Kind::conflict, flag,
                     flag + ": the command line says " + shown(now) + ", the run was recorded with " +
                         shown(was) + " (config." + o.key +
                         "); it changes results, so a resume keeps it (resume without " + flag +
                         ", or start a new run with --out)"};
}

}  // namespace

const std::vector<RunOption>& run_options() {
  static const std::vector<RunOption> table = make_table();
  return table;
}

void add_run_options(CLI::App& run, RunCommand& cmd) {
  for (const auto& o : run_options()) o.add(run, cmd);
}

std::set<std::string> given_run_options(const CLI::App& run) {
  std::set<std::string> given;
  for (const auto& o : run_options())
    if (const CLI::Option* opt = run.get_option_no_throw(cli_name(o.flag)); opt && opt->count() > 0)
      given.insert(o.key);
  return given;
}

const std::vector<std::string>& eval_option_keys() {
  static const std::vector<std::string> keys = {
      "suite",    "backend", "profile", "only",     "trials",          "reps",      "perf_inputs",    "bench",
      "baseline", "device",  "devices", "profiler", "profile_failing", "allow_ops", "allow_precision"};
  return keys;
}

void add_eval_options(CLI::App& eval, RunCommand& shared) {
  for (const auto& o : run_options())
    if (std::find(eval_option_keys().begin(), eval_option_keys().end(), o.key) != eval_option_keys().end()) {
      CLI::Option* opt = o.add(eval, shared);
      if (o.key == "suite") opt->required();
    }
}

void copy_eval_options(const RunCommand& s, EvalCommand& ev) {
  ev.suite = s.suite;
  ev.backend = s.backend;
  ev.profile = s.profile;
  ev.only = s.only;
  ev.trials = s.trials;
  ev.reps = s.reps;
  ev.perf_inputs = s.perf_inputs;
  ev.bench = s.bench;
  ev.baseline = s.baseline;
  ev.device = s.device;
  ev.devices = s.devices;
  ev.profiler = s.profiler;
  ev.profile_failing = s.profile_failing;
  ev.allow_ops = s.allow_ops;
  ev.allow_precision = s.allow_precision;
}

json run_config_json(const RunCommand& cmd, const RunFacts& facts) {
  json config = json::object();
  for (const auto& o : run_options())
    if (o.write) o.write(cmd, facts, config);
  return config;
}

json run_option_rules() {
  json rules = json::object();
  for (const auto& o : run_options())
    if (o.rule != R::not_recorded)
      rules[o.key] = o.rule == R::free ? "free" : o.rule == R::grow ? "grow" : "same";
  return rules;
}

std::optional<ResumeError> resume_run_config(const json& config, RunCommand& cmd) {
  if (!config.is_object())
    return ResumeError{ResumeError::Kind::bad_value, "",
                       "config: expected a JSON object, got " + config.dump()};
  for (const auto& o : run_options()) {
    if (!o.read || !config.contains(o.key) || config[o.key].is_null()) continue;
    try {
      if (!cmd.given.count(o.key)) {
        o.read(config, cmd);
      } else if (auto refused = check_given(o, config, cmd)) {
        return refused;
      }
    } catch (const std::exception& e) {
      return ResumeError{ResumeError::Kind::bad_value, cli_name(o.flag), e.what()};
    }
  }
  return std::nullopt;
}

}  // namespace kforge::agent
