#include "kforge/agent/episode.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <set>
#include <thread>

#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/agent/prompt_context.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/backends/diagnostics.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/resource_usage.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/report_html.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/retrieval/retrieval.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/sandbox/compile_cache.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) {
  g_stop.store(true);
}

struct Shared {
  const RunCommand* cmd = nullptr;
  const backends::Backend* backend = nullptr;
  RunDir* run = nullptr;
  LlmClient* llm = nullptr;
  backends::RunnerPool* runners = nullptr;
  std::counting_semaphore<1024>* compile_slots = nullptr;
  retrieval::ExemplarStore* store = nullptr;
  retrieval::Strategy strategy = retrieval::Strategy::none;
  std::string device_name;
  prompts::HardwareFacts hardware;
  std::optional<DevicePeaks> peaks;  // measured once per device (cache file), when known
  std::unique_ptr<ProfileStep> profile_step;
  backends::EvalOptions opt;
  std::mutex mu;  // library, load cache
  std::vector<retrieval::Exemplar> library;
  std::map<std::string, backends::LoadResult> loads;
  std::atomic<int> attempts{0}, passes{0}, episodes_done{0};
  std::atomic<int> llm_errors{0}, consecutive_llm_errors{0},
      budget_stops{0};                                            // an llm_error pauses its episode
  std::atomic<bool> llm_down{false};                              // max_llm_failures reached: no new turns
  std::atomic<int> infra_errors{0}, consecutive_infra_errors{0};  // an infra_error pauses its episode
  std::atomic<bool> infra_down{false};                            // max_infra_failures reached: no new turns
  std::map<std::string, std::string> unusable;  // task -> why it cannot be judged (under mu)
  std::map<std::string, std::int64_t> tokens;   // task -> LLM tokens spent (under mu)
};

bool stopping(const Shared& sh) {
  return g_stop.load() || sh.llm_down.load() || sh.infra_down.load();
}

/// The pass feedback's figures (issue 11 §2) from the record's timings and profile.
void add_profile(prompts::PastAttempt& p, const AttemptRecord& r) {
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
  add_profile(p, r);
  return p;
}

backends::LoadResult load_for(Shared& sh, const backends::TaskRef& ref) {
  {
    std::lock_guard lk(sh.mu);
    auto it = sh.loads.find(ref.id);
    if (it != sh.loads.end()) return it->second;
  }
  backends::LoadResult lr;
  {
    auto lease = sh.runners->acquire();
    lr = lease->load(ref);
  }
  std::lock_guard lk(sh.mu);
  sh.loads[ref.id] = lr;
  return lr;
}

/// One episode: turns first_turn..T of one (task, sample); history holds the recorded ones.
void run_episode(Shared& sh, const Task& task, const backends::TaskRef& ref, int sample, int first_turn,
                 std::vector<prompts::PastAttempt> history) {
  const RunCommand& cmd = *sh.cmd;
  const std::string src_name = sh.backend->source_file_name();
  backends::LoadResult lr = load_for(sh, ref);
  if (!lr.ok) {
    // The task cannot be judged (its reference does not load or run, or its output is random):
    // listed once as unusable, and no LLM call is spent on it.
    std::lock_guard lk(sh.mu);
    if (sh.unusable.emplace(task.id, unusable_reason(lr.error)).second)
      std::cerr << "kforge run: task " << task.id
                << " is unusable: " << truncate_middle(sh.unusable[task.id], 600)
                << " (no LLM call is made for it)\n";
    return;
  }
  std::vector<prompts::TensorInfo> tensors;
  for (const auto& t : lr.inputs) tensors.push_back({"input", t.name, t.kind, t.dtype, t.shape});
  for (const auto& t : lr.outputs) tensors.push_back({"output", t.name, t.kind, t.dtype, t.shape});

  for (int turn = first_turn; turn <= cmd.turns; ++turn) {
    if (stopping(sh)) return;
    if (cmd.task_token_budget > 0) {
      std::lock_guard lk(sh.mu);
      if (sh.tokens[task.id] >= cmd.task_token_budget) {
        sh.budget_stops++;
        return;
      }
    }
    AttemptRecord rec;
    rec.task = task.id;
    rec.category = task.category;
    rec.difficulty = task.difficulty;
    rec.sample = sample;
    rec.turn = turn;
    rec.backend = cmd.backend;
    rec.model = sh.llm->model();
    rec.exemplar = cmd.exemplar;
    rec.temperature = sample_temperature(cmd, sample);
    rec.started_at = utc_now();
    rec.attempt_dir = attempt_rel_path(task.id, sample, turn).string();
    const auto t0 = std::chrono::steady_clock::now();

    prompts::PromptInput in;
    in.backend = cmd.backend;
    in.language = sh.backend->prompt_language();
    in.device_type = sh.backend->device_type();
    in.task_id = task.id;
    in.category = task.category;
    in.reference = ref.source;
    in.module_mode = ref.module_mode;
    {
      auto allowed = cmd.allow_precision;
      allowed.insert(allowed.end(), task.allow_precision.begin(), task.allow_precision.end());
      in.checks = judged_checks(task, lr.outputs, cmd.trials, allowed);
    }
    in.device = sh.device_name;
    in.hardware = sh.hardware;
    in.tensors = tensors;
    in.tolerances = output_tolerances(task, tensors);
    {
      std::lock_guard lk(sh.mu);
      in.exemplars = sh.store->select(sh.strategy, task.id, task.category, ref.source, sh.library);
    }
    in.history = history;
    in.policy = cmd.history == "all" ? prompts::HistoryPolicy::all : prompts::HistoryPolicy::last;
    in.token_budget = cmd.token_budget;
    prompts::Prompt prompt = prompts::render_prompt(in);
    const std::string prompt_md = prompt.markdown();
    rec.prompt_sha = sha256_hex(prompt_md);
    sh.run->write_attempt_file(task.id, sample, turn, "prompt.md", prompt_md);

    ChatRequest req;
    req.messages = {{"system", prompt.system}, {"user", prompt.user}};
    req.temperature = rec.temperature;
    req.top_p = cmd.top_p;
    req.max_tokens = cmd.max_tokens;
    if (!cmd.reasoning_effort.empty()) req.reasoning_effort = cmd.reasoning_effort;
    req.seed = cmd.seed + sample;
    req.task = task.id;
    req.sample = sample;
    req.turn = turn;
    ChatResult cr = sh.llm->chat(req);
    rec.llm_status = std::string(to_string(cr.status));
    rec.llm_ms = cr.latency_ms;
    rec.prompt_tokens = cr.prompt_tokens;
    rec.completion_tokens = cr.completion_tokens;
    rec.cost_usd = cr.cost_usd.value_or(0.0);
    sh.run->write_attempt_file(task.id, sample, turn, "response.txt", cr.text);
    {
      std::lock_guard lk(sh.mu);
      sh.tokens[task.id] += cr.prompt_tokens + cr.completion_tokens;
    }

    json result;
    std::string source, detail;
    bool counts_in_history = true;
    const bool llm_failed = !cr.ok() && cr.status != ChatStatus::empty_reply;
    if (llm_failed) {
      // The endpoint failed: no model output to judge. Recorded, not scored; the episode pauses
      // here and --resume asks this turn again.
      rec.outcome = Outcome::llm_error;
      rec.sub_kind = rec.llm_status;
      rec.message = truncate_middle("LLM call failed: " + cr.message, 400);
      detail = rec.message;
      counts_in_history = false;
    } else if (!cr.ok()) {
      rec.outcome = Outcome::format_error;  // the model answered with nothing
      rec.sub_kind = rec.llm_status;        // empty_reply
      rec.message =
          "The reply had no text content" +
          (cr.finish_reason.empty() ? std::string(".") : " (finish reason: " + cr.finish_reason + ").");
      detail = rec.message;
    } else if (auto ex = sh.backend->extract(cr.text); !ex.ok) {
      rec.outcome = Outcome::format_error;
      rec.sub_kind = std::string(backends::to_string(ex.error));
      rec.message = truncate_middle(ex.message, 400);
      detail = ex.message;
    } else {
      source = ex.source;
      rec.source_sha = sha256_hex(source);
      sh.run->write_attempt_file(task.id, sample, turn, src_name, source);
      const fs::path workdir = sh.run->attempt_path(task.id, sample, turn);
      backends::Evaluation ev;
      sh.compile_slots->acquire();  // compile bound; a failed compile never waits for the GPU slot
      try {
        ev = backends::compile_candidate(*sh.backend, source, workdir / "build", sh.opt);
      } catch (...) {
        sh.compile_slots->release();
        throw;
      }
      sh.compile_slots->release();
      if (ev.compile.ok()) {
        auto lease = sh.runners->acquire();  // check, bench and profile of this attempt hold the slot
        backends::check_and_bench(ev, *lease, ref, sh.opt);
        fill_record(rec, ev, lr.flops, task_bytes(lr));
        record_profiler(rec, *sh.profile_step, *lease, ref, ev, workdir / "profile");
      } else {
        fill_record(rec, ev, lr.flops, task_bytes(lr));
      }
      record_roofline(rec, sh.peaks, lr.flops, task_bytes(lr));
      rec.module_mode = ref.module_mode;
      auto allowed = cmd.allow_precision;
      allowed.insert(allowed.end(), task.allow_precision.begin(), task.allow_precision.end());
      record_precision(rec, ev, cmd.backend, lr, allowed);
      detail = ev.message;
      if (rec.passed()) {
        // The real error figures, so the model sees how close to the line it is.
        char b[256];
        std::snprintf(b, sizeof b,
                      "max abs error %.3g, max rel error %.3g (|out - ref| / (|ref| + atol)), tolerance "
                      "ratio %.3g (1 = at the tolerance)",
                      rec.max_abs_err, rec.max_rel_err, rec.tolerance_ratio);
        detail = b;
        if (rec.precision_disallowed)
          detail += "\nLower-precision math was found in your binary (" + rec.precision +
                    " tensor-core instructions) on a task of higher precision: this pass is recorded but "
                    "its speedup is not credited. Compute at the task's precision.";
      }
      // kforge's own failure (toolchain, judge, reference): not the model's; its text never
      // reaches the model, and the turn is asked again on --resume.
      if (rec.outcome == Outcome::infra_error) counts_in_history = false;
      // First errors with file:line, the offending source line and the notes attached to
      // each (backends::summarise), deduplicated.
      if (ev.outcome == Outcome::compile_error && !ev.compile.summary.empty()) detail = ev.compile.summary;
      if (!ev.compile.log.empty())
        sh.run->write_attempt_file(task.id, sample, turn, "build.log", ev.compile.log);
      result["compile_log"] = ev.compile.log;
    }
    rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rec.finished_at = utc_now();
    result["outcome"] = std::string(to_string(rec.outcome));
    result["sub_kind"] = rec.sub_kind;
    result["message"] = detail;
    result["llm_status"] = rec.llm_status;
    result["llm_message"] = cr.message;
    result["in_history"] = counts_in_history;
    sh.run->write_attempt_file(task.id, sample, turn, "result.json", result.dump(2));
    sh.run->append(rec);
    sh.attempts++;
    if (llm_failed) {
      sh.llm_errors++;
      const int n = ++sh.consecutive_llm_errors;
      if (cmd.max_llm_failures > 0 && n >= cmd.max_llm_failures && !sh.llm_down.exchange(true))
        spdlog::error("{} consecutive LLM failures (last: {}); stopping the run", n, rec.message);
      return;
    }
    sh.consecutive_llm_errors = 0;
    if (rec.outcome == Outcome::infra_error) {
      sh.infra_errors++;
      const int n = ++sh.consecutive_infra_errors;
      spdlog::warn("{} sample {} turn {}: infra_error/{}: {}", task.id, sample, turn, rec.sub_kind,
                   rec.message);
      if (cmd.max_infra_failures > 0 && n >= cmd.max_infra_failures && !sh.infra_down.exchange(true))
        spdlog::error("{} consecutive infrastructure failures (last: {}); stopping the run", n, rec.message);
      return;
    }
    sh.consecutive_infra_errors = 0;
    if (counts_in_history) history.push_back(past_from_record(rec, source, detail));
    if (rec.passed()) {
      sh.passes++;
      std::lock_guard lk(sh.mu);
      sh.library.push_back({task.id, task.category, ref.source, source});
      if (cmd.stop_on == "pass") return;
    }
  }
}

/// Rebuilds an episode's history from its recorded attempts (resume).
std::vector<prompts::PastAttempt> history_from_run(const RunDir& run, const std::vector<AttemptRecord>& recs,
                                                   const std::string& src_name) {
  std::vector<prompts::PastAttempt> h;
  for (const auto& r : recs) {
    if (!is_model_outcome(r.outcome)) continue;  // an llm_error turn is asked again
    fs::path dir = run.path() / r.attempt_dir;
    if (r.attempt_dir.empty()) dir = run.attempt_path(r.task, r.sample, r.turn);
    std::string source = fs::exists(dir / src_name) ? read_file(dir / src_name) : "";
    std::string detail = r.message;
    bool in_history = true;
    if (fs::exists(dir / "result.json")) {
      try {
        auto j = json::parse(read_file(dir / "result.json"));
        detail = j.value("message", detail);
        in_history = j.value("in_history", true);
      } catch (...) {
      }
    }
    if (in_history) h.push_back(past_from_record(r, source, detail));
  }
  return h;
}

/// The manifest's "config": every option that shapes the run's results (restore_config reads
/// it back on --resume).
json config_json(const RunCommand& cmd, const Suite& suite) {
  json c{{"suite", suite.name},
         {"suite_root", suite.root.string()},
         {"backend", cmd.backend},
         {"llm", cmd.llm},
         {"base_url", cmd.base_url},
         {"api_key_env", cmd.api_key_env},
         {"samples", cmd.samples},
         {"turns", cmd.turns},
         {"stop_on", cmd.stop_on},
         {"exemplar", cmd.exemplar},
         {"history", cmd.history},
         {"profile", cmd.profile},
         {"only", cmd.only},
         {"tasks", cmd.tasks},
         {"max_tasks", cmd.max_tasks},
         {"temperature", cmd.temperatures},
         {"top_p", cmd.top_p},
         {"max_tokens", cmd.max_tokens},
         {"reasoning_effort", cmd.reasoning_effort},
         {"seed", cmd.seed},
         {"token_budget", cmd.token_budget},
         {"task_token_budget", cmd.task_token_budget},
         {"max_llm_failures", cmd.max_llm_failures},
         {"max_infra_failures", cmd.max_infra_failures},
         {"llm_timeout_ms", cmd.llm_timeout_ms},
         {"llm_retries", cmd.llm_retries},
         {"trials", cmd.trials},
         {"allow_precision", cmd.allow_precision},
         {"allow_ops", cmd.allow_ops},
         {"bench", cmd.bench},
         {"reps", cmd.reps},
         {"device", cmd.device},
         {"profiler", cmd.profiler},
         {"profile_failing", cmd.profile_failing}};
  c["price_input_per_mtok"] = cmd.price_input_per_mtok ? json(*cmd.price_input_per_mtok) : json(nullptr);
  c["price_output_per_mtok"] = cmd.price_output_per_mtok ? json(*cmd.price_output_per_mtok) : json(nullptr);
  return c;
}

/// --resume: takes every recorded option that the command line did not give again. Throws
/// (naming the field) when a recorded value has the wrong type.
void restore_config(const json& c, RunCommand& cmd) {
  auto take = [&](const char* key, auto& field) {
    if (cmd.given.count(key) || !c.contains(key) || c[key].is_null()) return;
    try {
      c[key].get_to(field);
    } catch (const json::exception& e) {
      throw std::runtime_error(std::string("config.") + key + ": " + e.what());
    }
  };
  if (!cmd.given.count("suite")) {
    if (c.contains("suite_root") && c["suite_root"].is_string())
      cmd.suite = c["suite_root"];
    else
      take("suite", cmd.suite);
  }
  take("backend", cmd.backend);
  take("llm", cmd.llm);
  take("base_url", cmd.base_url);
  take("api_key_env", cmd.api_key_env);
  take("samples", cmd.samples);
  take("turns", cmd.turns);
  take("stop_on", cmd.stop_on);
  take("exemplar", cmd.exemplar);
  take("history", cmd.history);
  if (!cmd.given.count("profile") && c.value("profile", "") != "default") take("profile", cmd.profile);
  take("only", cmd.only);
  take("tasks", cmd.tasks);
  take("max_tasks", cmd.max_tasks);
  if (!cmd.given.count("temperature") && c.contains("temperature")) {
    if (c["temperature"].is_number())
      cmd.temperatures = {c["temperature"].get<double>()};
    else
      take("temperature", cmd.temperatures);
  }
  take("top_p", cmd.top_p);
  take("max_tokens", cmd.max_tokens);
  take("reasoning_effort", cmd.reasoning_effort);
  take("seed", cmd.seed);
  take("token_budget", cmd.token_budget);
  take("task_token_budget", cmd.task_token_budget);
  take("max_llm_failures", cmd.max_llm_failures);
  take("max_infra_failures", cmd.max_infra_failures);
  take("llm_timeout_ms", cmd.llm_timeout_ms);
  take("llm_retries", cmd.llm_retries);
  take("trials", cmd.trials);
  take("allow_precision", cmd.allow_precision);
  take("allow_ops", cmd.allow_ops);
  take("bench", cmd.bench);
  take("reps", cmd.reps);
  take("device", cmd.device);
  take("profiler", cmd.profiler);
  take("profile_failing", cmd.profile_failing);
  if (!cmd.given.count("price_in") && c.contains("price_input_per_mtok") &&
      c["price_input_per_mtok"].is_number())
    cmd.price_input_per_mtok = c["price_input_per_mtok"].get<double>();
  if (!cmd.given.count("price_out") && c.contains("price_output_per_mtok") &&
      c["price_output_per_mtok"].is_number())
    cmd.price_output_per_mtok = c["price_output_per_mtok"].get<double>();
}

}  // namespace

double sample_temperature(const RunCommand& cmd, int sample) {
  if (cmd.temperatures.empty()) return 0.0;
  return cmd
      .temperatures[std::min(static_cast<std::size_t>(std::max(sample, 0)), cmd.temperatures.size() - 1)];
}

int run_agent(const RunCommand& cmd_in) {
  RunCommand cmd = cmd_in;
  const bool resuming = !cmd.resume.empty();
  if (resuming) cmd.out = cmd.resume;
  if (cmd.out.empty()) {
    std::cerr << "kforge run: --out RUN_DIR (or --resume RUN_DIR) is required\n";
    return 2;
  }
  if (resuming) {
    try {
      auto m = json::parse(read_file(cmd.out / "manifest.json"));
      restore_config(m.at("config"), cmd);
    } catch (const std::exception& e) {
      std::cerr << "kforge run: --resume " << cmd.out.string() << ": manifest.json: " << e.what() << "\n";
      return 2;
    }
  }
  const backends::Backend* backend = backends::find_backend(cmd.backend);
  if (!backend) {
    std::cerr << "kforge run: --backend " << cmd.backend << ": unknown backend\n";
    return 2;
  }
  auto strategy = retrieval::strategy_from_string(cmd.exemplar);
  if (!strategy) {
    std::cerr << "kforge run: --exemplar " << cmd.exemplar
              << ": expected none, add, category, bm25 or library\n";
    return 2;
  }
  Suite suite;
  try {
    suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge run: " << e.what() << "\n";
    return 2;
  }
  std::vector<const Task*> tasks;
  for (const auto& t : suite.tasks) {
    if (!cmd.only.empty() && t.id.find(cmd.only) == std::string::npos) continue;
    if (!cmd.tasks.empty() && std::find(cmd.tasks.begin(), cmd.tasks.end(), t.id) == cmd.tasks.end())
      continue;
    if (cmd.max_tasks > 0 && static_cast<int>(tasks.size()) >= cmd.max_tasks) break;
    tasks.push_back(&t);
  }
  if (tasks.empty()) {
    std::cerr << "kforge run: no task of suite " << suite.name << " matches\n";
    return 2;
  }
  LlmConfig lc;
  lc.base_url = cmd.base_url;
  if (!cmd.api_key_env.empty()) {
    const char* k = std::getenv(cmd.api_key_env.c_str());
    if (!k) {
      std::cerr << "kforge run: --api-key-env " << cmd.api_key_env << ": variable not set\n";
      return 2;
    }
    lc.api_key = k;
  }
  lc.max_concurrency = std::max(1, cmd.llm_concurrency);
  lc.timeout_ms = cmd.llm_timeout_ms;
  lc.max_retries = cmd.llm_retries;
  lc.price_input_per_mtok = cmd.price_input_per_mtok;
  lc.price_output_per_mtok = cmd.price_output_per_mtok;
  std::unique_ptr<LlmClient> llm;
  try {
    llm = make_llm_client(cmd.llm, lc);
  } catch (const std::exception& e) {
    std::cerr << "kforge run: --llm " << cmd.llm << ": " << e.what() << "\n";
    return 2;
  }

  const std::string device = cmd.device.empty() ? backend->default_device() : cmd.device;
  backends::RunnerConfig rc;
  rc.device = device;
  backends::RunnerPool runners({rc});
  std::string hello;
  {
    auto lease = runners.acquire();
    hello = lease->hello();
  }
  if (hello.empty()) {
    std::cerr << "kforge run: kforge-runner did not start; build it or set KFORGE_RUNNER\n";
    return 3;
  }
  json hello_j = json::parse(hello, nullptr, false);
  std::string device_name = device == "cpu" ? "the host CPU" : device;
  if (hello_j.is_object())
    for (const char* k : {"device_name", "gpu", "cpu"})
      if (hello_j.contains(k) && hello_j[k].is_string()) {
        device_name = hello_j[k].get<std::string>();
        break;
      }

  backends::CompileOptions co;
  co.cache_dir = sandbox::CompileCache::default_dir();
  auto compiler = backend->find_compiler(co);
  json manifest{
      {"command", "run"},
      {"config", config_json(cmd, suite)},
      {"runner", hello_j.is_discarded() ? json(hello) : hello_j},
      {"toolchain", {{"compiler", compiler ? compiler->string() : ""}}},
      {"seeds", {{"llm_seed", "sample index"}, {"check_seed", "random per attempt, in attempts.jsonl"}}},
      {"started_at", utc_now()}};
  std::optional<RunDir> run;
  try {
    if (resuming || fs::exists(cmd.out / "manifest.json")) {
      run.emplace(RunDir::open_for_resume(cmd.out));
      // The manifest keeps the configuration in effect (a resume may change options) and a
      // log of the resumes with the options each gave.
      json m = run->manifest();
      m["config"] = manifest["config"];
      m["runner"] = manifest["runner"];
      if (!m.contains("resumes") || !m["resumes"].is_array()) m["resumes"] = json::array();
      m["resumes"].push_back({{"at", utc_now()}, {"given", cmd.given}});
      run->update_manifest(m);
    } else {
      run.emplace(RunDir::create(cmd.out, manifest));
    }
  } catch (const std::exception& e) {
    std::cerr << "kforge run: " << cmd.out.string() << ": " << e.what() << "\n";
    return 2;
  }

  std::map<std::string, std::string> refs_by_id;
  for (const auto& t : suite.tasks) {
    try {
      refs_by_id[t.id] = task_ref(t, cmd.profile).source;
    } catch (...) {
    }
  }
  retrieval::ExemplarStore store(kforge_home() / "prompts" / "exemplars" / cmd.backend,
                                 exemplar_reference_source(refs_by_id));

  const int jobs = cmd.compile_jobs > 0 ? cmd.compile_jobs
                                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::counting_semaphore<1024> compile_slots(std::min(jobs, 1024));
  Shared sh;
  sh.cmd = &cmd;
  sh.backend = backend;
  sh.run = &*run;
  sh.llm = llm.get();
  sh.runners = &runners;
  sh.compile_slots = &compile_slots;
  sh.store = &store;
  sh.strategy = *strategy;
  sh.device_name = device_name;
  sh.hardware = device_facts(hello_j, device);
  if (sh.hardware.name.empty()) sh.hardware.name = device_name;
  sh.profile_step = make_profile_step(cmd.profiler, cmd.backend);
  sh.profile_step->failing = cmd.profile_failing;
  if (sh.profile_step->profiler != "none") {
    auto lease = runners.acquire();
    sh.peaks = device_peaks(*lease, sh.hardware.name);
  }
  if (sh.peaks) {
    sh.hardware.measured_dram_gbps = sh.peaks->dram_bytes_per_s / 1e9;
    sh.hardware.measured_fp32_tflops = sh.peaks->flops_per_s / 1e12;
  }
  sh.opt.trials = cmd.trials;
  sh.opt.bench = cmd.bench;
  sh.opt.bench_options.reps = cmd.reps;
  sh.opt.bench_options.min_reps = std::min(cmd.reps, 10);
  sh.opt.compile = co;

  // Recorded attempts (resume): grouped by episode, tokens per task, passing kernels for the
  // library strategy.
  std::map<std::pair<std::string, int>, std::vector<AttemptRecord>> recorded;
  for (auto& r : run->load_attempts()) {
    sh.tokens[r.task] += r.prompt_tokens + r.completion_tokens;
    if (r.passed()) {
      fs::path f = run->path() / r.attempt_dir / backend->source_file_name();
      if (fs::exists(f)) sh.library.push_back({r.task, r.category, refs_by_id[r.task], read_file(f)});
    }
    recorded[{r.task, r.sample}].push_back(std::move(r));
  }
  for (auto& [k, v] : recorded)
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.turn < b.turn; });

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  const int threads = std::max(2, std::min(64, cmd.llm_concurrency + jobs + 1));
  boost::asio::thread_pool pool(static_cast<std::size_t>(threads));
  int episodes = 0;
  for (const Task* t : tasks) {
    backends::TaskRef ref;
    try {
      ref = task_ref(*t, cmd.profile);
      ref.allow_ops.insert(ref.allow_ops.end(), cmd.allow_ops.begin(), cmd.allow_ops.end());
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}", t->id, e.what());
      continue;
    }
    for (int s = 0; s < cmd.samples; ++s) {
      const auto& recs = recorded[{t->id, s}];
      int next = 1;
      bool passed = false;
      for (const auto& r : recs) {
        if (!is_model_outcome(r.outcome)) continue;  // llm_error, infra_error: ask that turn again
        next = std::max(next, r.turn + 1);
        passed = passed || r.passed();
      }
      if ((passed && cmd.stop_on == "pass") || next > cmd.turns) continue;
      auto hist = history_from_run(*run, recs, backend->source_file_name());
      ++episodes;
      boost::asio::post(pool, [&sh, t, ref, s, next, hist]() mutable {
        try {
          run_episode(sh, *t, ref, s, next, std::move(hist));
        } catch (const std::exception& e) {
          spdlog::error("{} sample {}: {}", t->id, s, e.what());
        }
        sh.episodes_done++;
      });
    }
  }

  // One-line progress display on stderr.
  std::atomic<bool> done{false};
  const auto t_start = std::chrono::steady_clock::now();
  std::thread progress([&] {
    const bool tty = isatty(STDERR_FILENO);
    while (!done.load()) {
      for (int i = 0; i < 5 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double min =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() / 60.0;
      std::fprintf(
          stderr,
          "%s[kforge run] episodes %d/%d  attempts %d  passes %d  llm errors %d  infra errors %d  %.1f "
          "attempts/min%s",
          tty ? "\r" : "", sh.episodes_done.load(), episodes, sh.attempts.load(), sh.passes.load(),
          sh.llm_errors.load(), sh.infra_errors.load(), min > 0 ? sh.attempts.load() / min : 0.0,
          tty ? "   " : "\n");
      if (!tty) std::this_thread::sleep_for(std::chrono::seconds(5));
    }
    std::fprintf(stderr, "\n");
  });
  pool.join();
  done = true;
  progress.join();
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);

  write_unusable(cmd.out, sh.unusable);
  write_report(cmd.out);
  (void)export_library(cmd.out);
  if (cmd.print_report && fs::exists(cmd.out / "report.md")) std::cout << read_file(cmd.out / "report.md");
  if (sh.budget_stops > 0)
    std::cerr << "kforge run: " << sh.budget_stops.load() << " episode(s) ended at the task token budget ("
              << cmd.task_token_budget << " tokens per task)\n";
  if (sh.infra_errors > 0 || !sh.unusable.empty())
    std::cerr << "kforge run: " << sh.infra_errors.load()
              << " attempt(s) could not be judged (infra_error: kforge's toolchain, runner or reference "
                 "failed; not scored, --resume asks them again); "
              << sh.unusable.size() << " task(s) unusable (listed in " << (cmd.out / "unusable.json").string()
              << ")\n";
  if (sh.infra_down.load()) {
    std::cerr << "kforge run: stopped after " << cmd.max_infra_failures
              << " consecutive infrastructure failures (see infra_error in attempts.jsonl); fix the "
                 "toolchain or runner and continue with --resume "
              << cmd.out.string() << "\n";
    return kExitInfraError;
  }
  if (sh.llm_down.load()) {
    std::cerr << "kforge run: stopped after " << cmd.max_llm_failures
              << " consecutive LLM failures (see llm_error in attempts.jsonl); fix the endpoint and "
                 "continue with --resume "
              << cmd.out.string() << "\n";
    return 75;
  }
  if (g_stop.load()) {
    std::cerr << "kforge run: interrupted; in-flight attempts recorded. Continue with --resume "
              << cmd.out.string() << "\n";
    return 130;
  }
  if (sh.llm_errors > 0)
    std::cerr << "kforge run: " << sh.llm_errors.load() << " episode(s) paused at an llm_error; --resume "
              << cmd.out.string() << " asks those turns again\n";
  return 0;
}

int run_report(const fs::path& run_dir) {
  if (!fs::exists(run_dir / "attempts.jsonl")) {
    std::cerr << "kforge report: " << run_dir.string() << ": no attempts.jsonl\n";
    return 2;
  }
  write_report(run_dir);
  std::cout << read_file(run_dir / "report.md");
  std::cerr << "kforge report: wrote " << (run_dir / "report.md").string() << " and "
            << (run_dir / "report.html").string() << "\n";
  return 0;
}

int run_compare(const fs::path& a, const fs::path& b, const fs::path& html) {
  for (const auto& d : {a, b})
    if (!fs::exists(d / "attempts.jsonl")) {
      std::cerr << "kforge compare: " << d.string() << ": no attempts.jsonl\n";
      return 2;
    }
  ComparedRuns c = compare_runs(a, b);
  for (const auto& n : compare_drop_notes(c)) std::cerr << "kforge compare: warning: " << n << "\n";
  std::cout << render_compare_md(c);
  if (!html.empty()) {
    HtmlPage page = write_compare_html(c, html);
    std::cerr << "kforge compare: wrote " << page.path.string() << (page.plots ? "" : " (" + page.note + ")")
              << "\n";
  }
  return 0;
}

}  // namespace kforge::agent
