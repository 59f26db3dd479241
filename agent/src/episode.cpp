// agent/src/episode.cpp — `kforge run`: set-up, the episode list, the scheduler, the report.
#include "kforge/agent/episode.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/agent/llm.hpp"
#include "kforge/agent/operator_schema.hpp"
#include "kforge/agent/ports.hpp"
#include "kforge/agent/progress.hpp"
#include "kforge/agent/prompt_context.hpp"
#include "kforge/agent/run_checks.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/agent/run_options.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/agent/scheduler.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/report_html.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/run_report.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/retrieval/retrieval.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/run_status.hpp"
#include "kforge/sandbox/compile_cache.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

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

/// Everything `kforge run` sets up before its episodes start. One owner: run_agent's frame.
struct RunSetup {
  RunCommand cmd;
  bool resuming = false;
  const backends::Backend* backend = nullptr;
  retrieval::Strategy strategy = retrieval::Strategy::none;
  Suite suite;
  std::vector<const Task*> tasks;
  std::unique_ptr<LlmClient> llm;
  std::vector<std::unique_ptr<backends::RunnerClient>> runners;  ///< one per device, each a judge slot
  json devices = json::array();                                  ///< [{device, runner hello}]
  std::string device_name;
  prompts::HardwareFacts hardware;
  std::optional<RunDir> run;
  std::unique_ptr<ProfileStep> profile;
  AttemptSetup attempt;
  std::map<std::string, std::string> refs_by_id;
  std::deque<TaskJudging> judging;  ///< stable addresses: the episodes point here
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  ///< this invocation's
};

/// --resume: the run directory and its recorded configuration. 0 or an exit status.
int restore_command(RunSetup& rs) {
  RunCommand& cmd = rs.cmd;
  rs.resuming = !cmd.resume.empty();
  std::error_code ec;
  if (rs.resuming && !cmd.out.empty() &&
      fs::weakly_canonical(cmd.out, ec) != fs::weakly_canonical(cmd.resume, ec)) {
    std::cerr << "kforge run: --out " << cmd.out.string() << " and --resume " << cmd.resume.string()
              << " both given: --resume continues its run in place (drop --out, or drop --resume to start "
                 "a new run there)\n";
    return 2;
  }
  if (rs.resuming) cmd.out = cmd.resume;
  if (cmd.out.empty()) {
    std::cerr << "kforge run: --out RUN_DIR (or --resume RUN_DIR) is required\n";
    return 2;
  }
  if (!rs.resuming) return 0;
  std::optional<ResumeError> refused;
  try {
    auto m = json::parse(read_file(cmd.out / "manifest.json"));
    refused = resume_run_config(m.at("config"), cmd);
  } catch (const std::exception& e) {
    refused = ResumeError{ResumeError::Kind::bad_value, "", e.what()};
  }
  if (!refused) return 0;
  std::cerr << "kforge run: --resume " << cmd.out.string() << ": manifest.json: " << refused->message << "\n";
  return 2;
}

/// The prompts of ATen-operator tasks state each overload's schema, asked of the torch
/// interpreter (the backend's for a Python backend, else $KFORGE_PYTHON, backends::torch_python, or
/// python3) once.
void add_operator_schemas(RunSetup& rs) {
  std::vector<Task*> ops;
  for (const Task* t : rs.tasks)
    if (t->format == TaskFormat::aten_operator) ops.push_back(const_cast<Task*>(t));  // rs.suite's own
  if (ops.empty()) return;
  std::string python = "python3";
  if (const char* env = std::getenv("KFORGE_PYTHON"); env && *env)
    python = env;
  else if (auto found = backends::torch_python())  // cpu, cuda: the Python backend's interpreter
    python = found->string();
  if (rs.backend->artifact_kind() == backends::ArtifactKind::python_module)
    if (auto p = rs.backend->find_compiler(backends::CompileOptions{})) python = p->string();
  for (const auto& m : fill_operator_schemas(ops, python)) std::cerr << "kforge run: " << m << "\n";
}

/// The backend, exemplar strategy, suite and the tasks the filters select. 0 or 2.
int select_tasks(RunSetup& rs) {
  const RunCommand& cmd = rs.cmd;
  rs.backend = backends::find_backend(cmd.backend);
  if (!rs.backend) {
    std::cerr << "kforge run: --backend " << cmd.backend << ": unknown backend\n";
    return 2;
  }
  auto strategy = retrieval::strategy_from_string(cmd.exemplar);
  if (!strategy) {
    std::cerr << "kforge run: --exemplar " << cmd.exemplar
              << ": expected none, add, category, bm25 or library\n";
    return 2;
  }
  rs.strategy = *strategy;
  try {
    rs.suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge run: " << e.what() << "\n";
    return 2;
  }
  if (const auto unknown = unknown_task_ids(cmd.tasks, rs.suite); !unknown.empty()) {
    for (const auto& u : unknown)
      std::cerr << "kforge run: --tasks " << u << ": no such task in suite " << rs.suite.name << "\n";
    return 2;
  }
  for (const auto& t : rs.suite.tasks) {
    if (!cmd.only.empty() && t.id.find(cmd.only) == std::string::npos) continue;
    if (!cmd.tasks.empty() && std::find(cmd.tasks.begin(), cmd.tasks.end(), t.id) == cmd.tasks.end())
      continue;
    if (cmd.max_tasks > 0 && static_cast<int>(rs.tasks.size()) >= cmd.max_tasks) break;
    rs.tasks.push_back(&t);
  }
  if (rs.tasks.empty()) {
    std::cerr << "kforge run: no task of suite " << rs.suite.name << " matches\n";
    return 2;
  }
  if (auto why = profile_problem(rs.tasks, cmd.profile, rs.suite.name)) {
    std::cerr << "kforge run: " << *why << "\n";
    return 2;
  }
  add_operator_schemas(rs);
  return 0;
}

/// The LLM client. 0 or 2.
int make_llm(RunSetup& rs) {
  const RunCommand& cmd = rs.cmd;
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
  try {
    rs.llm = make_llm_client(cmd.llm, lc);
  } catch (const std::exception& e) {
    std::cerr << "kforge run: --llm " << cmd.llm << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// Builds at once: --compile-jobs, else one per CPU.
int compile_jobs(const RunCommand& cmd) {
  return cmd.compile_jobs > 0 ? cmd.compile_jobs
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Starts one warm runner per device (each its own judge slot; runners.hpp). 0, 2 or 3.
int start_runners(RunSetup& rs) {
  // The builds' own start-up while the runners start: as many as the first turns' builds at once
  // are likely to need (two per judge slot), not one per CPU of a large machine (each of the
  // triton backend's scanners holds torch).
  const int slots = std::max<int>(1, static_cast<int>(rs.cmd.devices.size()));
  rs.backend->prewarm(std::min(compile_jobs(rs.cmd), 2 * slots), backends::CompileOptions{});
  StartedRunners started = agent::start_runners(rs.cmd.devices, rs.cmd.device, *rs.backend, "kforge run");
  if (started.rc) return started.rc;
  rs.runners = std::move(started.runners);
  rs.devices = std::move(started.devices);
  const json hello_j = json::parse(started.first_hello, nullptr, false);
  const std::string device = rs.runners[0]->config().device;
  rs.device_name = device == "cpu" ? "the host CPU" : device;
  if (hello_j.is_object())
    for (const char* k : {"device_name", "gpu", "cpu"})
      if (hello_j.contains(k) && hello_j[k].is_string()) {
        rs.device_name = hello_j[k].get<std::string>();
        break;
      }
  rs.hardware = device_facts(hello_j, device);
  if (rs.hardware.name.empty()) rs.hardware.name = rs.device_name;
  return 0;
}

/// Creates the run directory, or opens it for resume with the configuration now in effect.
int open_run(RunSetup& rs) {
  backends::CompileOptions co;
  co.cache_dir = sandbox::CompileCache::default_dir();
  auto compiler = rs.backend->find_compiler(co);
  json manifest{
      {"command", "run"},
      {"config", run_config_json(rs.cmd, {rs.suite.name, rs.suite.root.string()})},
      {"option_rules", run_option_rules()},
      {"runner", rs.devices[0]["runner"]},
      {"devices", rs.devices},
      {"toolchain", {{"compiler", compiler ? compiler->string() : ""}}},
      {"seeds", {{"llm_seed", "sample index"}, {"check_seed", "random per attempt, in attempts.jsonl"}}},
      {"started_at", iso8601_utc_now()}};
  try {
    if (rs.resuming) {  // --out on an existing run: RunDir::create refuses, pointing to --resume
      rs.run.emplace(RunDir::open_for_resume(rs.cmd.out));
      // The manifest keeps the configuration in effect (a resume may change options) and a
      // log of the resumes with the options each gave.
      json m = rs.run->manifest();
      for (const char* k : {"config", "option_rules", "runner", "devices"}) m[k] = manifest[k];
      if (!m.contains("resumes") || !m["resumes"].is_array()) m["resumes"] = json::array();
      m["resumes"].push_back({{"at", iso8601_utc_now()}, {"given", rs.cmd.given}});
      rs.run->update_manifest(m);
    } else {
      rs.run.emplace(RunDir::create(rs.cmd.out, manifest));
    }
  } catch (const std::exception& e) {
    std::cerr << "kforge run: " << rs.cmd.out.string() << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// The manifest's "profile_policy": the profiler that ran and which passes it profiled.
json profile_policy(const ProfileStep& step, bool every_pass) {
  std::string ncu = "never";
  if (step.ncu) ncu = every_pass ? "every_pass" : "improving_pass";
  return {
      {"profiler", step.profiler},
      {"ncu", ncu},
      {"rule", ncu == "improving_pass" ? "ncu on a pass that improves its episode's best credited speedup; "
                                         "other passes get the basic profile (--profile-every-pass: all)"
                                       : ""}};
}

/// The profile step, before the run directory exists: a profiler that cannot be used is a
/// configuration error (exit 2) that leaves nothing behind.
int make_profile(RunSetup& rs) {
  try {
    rs.profile = make_profile_step(rs.cmd.profiler, rs.cmd.backend);
  } catch (const std::exception& e) {
    std::cerr << "kforge run: " << e.what() << "\n";
    return 2;
  }
  rs.profile->failing = rs.cmd.profile_failing;
  return 0;
}

/// The judging setup shared by every attempt: options, profile step, the device's peaks.
void make_attempt_setup(RunSetup& rs) {
  const RunCommand& cmd = rs.cmd;
  AttemptSetup& a = rs.attempt;
  set_judging(a, rs.backend, cmd.backend, rs.profile.get(),
              {cmd.trials, cmd.bench, cmd.reps, cmd.perf_inputs, cmd.baseline, cmd.allow_precision});
  if (rs.profile->profiler != "none") a.peaks = device_peaks(*rs.runners[0], rs.hardware.name);
  json m = rs.run->manifest();
  m["profile_policy"] = profile_policy(*rs.profile, cmd.profile_every_pass);
  rs.run->update_manifest(m);
  if (a.peaks) {
    rs.hardware.measured_dram_gbps = a.peaks->dram_bytes_per_s / 1e9;
    rs.hardware.measured_fp32_tflops = a.peaks->flops_per_s / 1e12;
  }
  a.opt.bench_options.min_reps = std::min(cmd.reps, 10);
  for (const auto& t : rs.suite.tasks) {
    try {
      rs.refs_by_id[t.id] = task_ref(t, cmd.profile).source;
    } catch (...) {
    }
  }
}

/// Recorded attempts (resume), grouped by episode and sorted by turn.
using RecordedAttempts = std::map<std::pair<std::string, int>, std::vector<AttemptRecord>>;

/// The one place the run's list of episodes is built: every (task, sample) of the selected
/// tasks that is not finished, from its first unrecorded turn with its recorded history. A
/// filter over (task, sample) (e.g. a shard) belongs here.
std::vector<EpisodeSpec> episode_list(RunSetup& rs, RecordedAttempts& recorded) {
  const RunCommand& cmd = rs.cmd;
  std::vector<EpisodeSpec> out;
  for (const Task* t : rs.tasks) {
    TaskJudging tj;
    tj.task = t;
    try {
      tj.ref = task_ref_for(*t, cmd.profile, cmd.allow_ops);
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}", t->id, e.what());
      continue;
    }
    tj.module_suffix = module_suffix_for(rs.attempt, *t);
    TaskJudging* task = &rs.judging.emplace_back(std::move(tj));
    for (int s = 0; s < cmd.samples; ++s) {
      if (!in_shard(cmd.shard, t->id, s)) continue;  // another shard's episode
      const auto& recs = recorded[{t->id, s}];
      int next = 1;
      bool passed = false;
      for (const auto& r : recs) {
        if (!is_model_outcome(r.outcome)) continue;  // llm_error, infra_error: ask that turn again
        next = std::max(next, r.turn + 1);
        passed = passed || r.passed();
      }
      if ((passed && cmd.stop_on == "pass") || next > cmd.turns) continue;
      out.push_back({task, s, next, sample_temperature(cmd, s),
                     history_from_run(*rs.run, recs, rs.backend->source_file_name()), std::nullopt});
    }
  }
  return out;
}

MachineConfig machine_config(const RunSetup& rs) {
  const RunCommand& cmd = rs.cmd;
  MachineConfig m;
  m.turns = cmd.turns;
  m.stop_on_pass = cmd.stop_on == "pass";
  m.task_token_budget = cmd.task_token_budget;
  m.backend = cmd.backend;
  m.model = rs.llm->model();
  m.exemplar = cmd.exemplar;
  m.source_file = rs.backend->source_file_name();
  m.top_p = cmd.top_p;
  m.max_tokens = cmd.max_tokens;
  m.reasoning_effort = cmd.reasoning_effort;
  m.seed = cmd.seed;
  m.profile_every_pass = cmd.profile_every_pass;
  const backends::Backend* b = rs.backend;
  m.extract = [b](const std::string& reply, const std::string& entry) {
    return extract_candidate(*b, reply, entry);
  };
  return m;
}

/// Progress on stderr (progress.hpp): on a terminal the bar, redrawn in place; in a log the
/// closing tally only (each attempt has its own line: watch_progress).
void show_progress(const RunTally& t, int active, std::chrono::steady_clock::time_point t0,
                   bool finished = false) {
  static const bool tty = isatty(STDERR_FILENO);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "%s%s%s", tty ? "\r" : "", progress_bar(t, active, s, finished).c_str(),
               tty ? "\033[K" : "\n");
}

/// Progress hooks of the scheduler: attempt lines in a log, the Ctrl-C notice everywhere.
void watch_progress(Scheduler& sched, std::chrono::steady_clock::time_point t0) {
  const bool tty = isatty(STDERR_FILENO);
  if (tty)
    sched.on_progress = [t0](const RunTally& t, int active) { show_progress(t, active, t0); };
  else
    sched.on_attempt = [](const AttemptRecord& rec) {
      std::fprintf(stderr, "%s\n", attempt_line(rec).c_str());
    };
  sched.on_interrupt = [tty](int in_flight) {
    std::fprintf(stderr, "%skforge run: finishing %d in-flight attempts; Ctrl-C again to abort\n",
                 tty ? "\n" : "", in_flight);
    std::fflush(stderr);
  };
}

/// Runs the episodes on one scheduler with the real adapters.
RunTally run_episodes(RunSetup& rs, std::vector<EpisodeSpec> episodes, const RecordedAttempts& recorded) {
  const RunCommand& cmd = rs.cmd;
  retrieval::ExemplarStore store(kforge_home() / "prompts" / "exemplars" / cmd.backend,
                                 exemplar_reference_source(rs.refs_by_id));
  RenderSetup render{&rs.attempt,
                     cmd.trials,
                     rs.device_name,
                     rs.hardware,
                     &store,
                     rs.strategy,
                     cmd.history == "all" ? prompts::HistoryPolicy::all : prompts::HistoryPolicy::last,
                     cmd.token_budget,
                     {},
                     cmd.max_tokens};
  for (const auto& [k, recs] : recorded)
    for (const auto& r : recs)
      if (r.passed()) {
        fs::path f = rs.run->path() / r.attempt_dir / rs.backend->source_file_name();
        if (fs::exists(f))
          render.library.push_back({r.task, r.category, rs.refs_by_id[r.task], read_file(f), ""});
      }
  const int jobs = compile_jobs(cmd);
  std::vector<backends::RunnerClient*> runners;
  for (auto& r : rs.runners) runners.push_back(r.get());
  auto chat = make_chat_port(*rs.llm);
  auto build = make_build_port(rs.attempt, jobs);
  auto judge = make_judge_port(rs.attempt, runners);
  auto renderer = make_render_port(std::move(render));
  auto storer = make_store_port(*rs.run);
  auto clock = make_clock_port();
  SchedulerConfig sc;
  sc.llm_concurrency = std::max(1, cmd.llm_concurrency);
  sc.compile_jobs = jobs;
  sc.max_llm_failures = cmd.max_llm_failures;
  sc.max_infra_failures = cmd.max_infra_failures;
  sc.handle_signals = true;
  sc.progress_interval_s = isatty(STDERR_FILENO) ? 0.5 : 0;  // a log gets a line per attempt instead
  boost::asio::io_context io;
  Scheduler sched(io, {chat.get(), build.get(), judge.get(), renderer.get(), storer.get(), clock.get()},
                  machine_config(rs), sc);
  for (const auto& [k, recs] : recorded)
    for (const auto& r : recs) sched.spent(r.task, r.prompt_tokens + r.completion_tokens);
  for (auto& e : episodes) sched.add(std::move(e));
  const auto t0 = std::chrono::steady_clock::now();
  watch_progress(sched, t0);
  RunTally tally = sched.run();
  show_progress(tally, 0, t0, true);  // episodes a stop left unfinished are not counted done
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  return tally;
}

/// The report, the closing lines and the exit status.
int finish_run(RunSetup& rs, const RunTally& t) {
  const RunCommand& cmd = rs.cmd;
  write_unusable(cmd.out, t.unusable);
  // Complete: no stop, and no episode paused at an llm_error (--resume asks those turns again).
  const bool complete = !t.interrupted && !t.llm_down && !t.infra_down &&
                        run_status(rs.run->load_attempts()).paused_episodes == 0;
  record_invocation(*rs.run,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - rs.started).count(),
                    complete);
  write_report(cmd.out);
  (void)export_library(cmd.out);
  std::fprintf(stderr, "kforge run: report %s (and %s)\n", (cmd.out / "report.md").string().c_str(),
               (cmd.out / "report.html").string().c_str());
  if (cmd.print_report && fs::exists(cmd.out / "report.md")) std::cout << read_file(cmd.out / "report.md");
  auto tally = t.tritonbench;
  tally.interpreter = !rs.runners.empty() && rs.runners.front()->config().device == "cpu";
  if (const std::string tb = tally.line(); !tb.empty()) std::cerr << "kforge run: " << tb << "\n";
  for (const auto& s : t.retired_slots)
    std::cerr << "kforge run: judge slot " << s << " left the pool (kept failing)\n";
  if (t.budget_stops > 0)
    std::cerr << "kforge run: " << t.budget_stops << " episode(s) ended at the task token budget ("
              << cmd.task_token_budget << " tokens per task)\n";
  if (t.infra_errors > 0 || !t.unusable.empty())
    std::cerr << "kforge run: " << t.infra_errors
              << " attempt(s) could not be judged (infra_error: kforge's toolchain, runner or reference "
                 "failed; not scored, --resume asks them again); "
              << t.unusable.size() << " task(s) unusable (listed in " << (cmd.out / "unusable.json").string()
              << ")\n";
  const std::string resume = " --resume " + cmd.out.string();
  if (t.infra_down) {
    std::cerr
        << "kforge run: stopped after " << cmd.max_infra_failures
        << " consecutive infrastructure failures (see infra_error in attempts.jsonl); fix the toolchain or "
           "runner and continue with"
        << resume << "\n";
    return kExitInfraError;
  }
  if (t.llm_down) {
    std::cerr
        << "kforge run: stopped after " << cmd.max_llm_failures
        << " consecutive LLM failures (see llm_error in attempts.jsonl); fix the endpoint and continue with"
        << resume << "\n";
    return kExitLlmError;
  }
  if (t.interrupted) {
    std::cerr << "kforge run: interrupted; finished attempts recorded. Continue with" << resume << "\n";
    return 130;
  }
  return finished_run_exit_status(cmd.out, std::cerr);
}

}  // namespace

double sample_temperature(const RunCommand& cmd, int sample) {
  if (cmd.temperatures.empty()) return 0.0;
  return cmd
      .temperatures[std::min(static_cast<std::size_t>(std::max(sample, 0)), cmd.temperatures.size() - 1)];
}

int run_agent(const RunCommand& cmd_in) {
  RunSetup rs;
  rs.cmd = cmd_in;
  for (int (*stage)(RunSetup&) :
       {restore_command, select_tasks, make_llm, make_profile, start_runners, open_run})
    if (int rc = stage(rs)) return rc;
  record_invocation(*rs.run, 0, false);  // being written: incomplete until finish_run says otherwise
  make_attempt_setup(rs);
  RecordedAttempts recorded;
  for (auto& r : rs.run->load_attempts()) recorded[{r.task, r.sample}].push_back(std::move(r));
  for (auto& [k, v] : recorded)
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.turn < b.turn; });
  auto episodes = episode_list(rs, recorded);
  const RunTally tally = run_episodes(rs, std::move(episodes), recorded);
  return finish_run(rs, tally);
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

fs::path compare_page_path(const fs::path& a, const fs::path& b, const fs::path& out) {
  if (!out.empty()) return out / "compare.html";
  auto name = [](const fs::path& p) {
    const fs::path n = fs::absolute(p).lexically_normal();
    return (n.has_filename() ? n : n.parent_path()).filename().string();
  };
  const fs::path na = fs::absolute(a).lexically_normal();
  const fs::path dir = (na.has_filename() ? na : na.parent_path()).parent_path();
  return dir / ("compare-" + name(a) + "-vs-" + name(b) + ".html");
}

int run_compare(const fs::path& a, const fs::path& b, const fs::path& html) {
  for (const auto& d : {a, b})
    if (!fs::exists(d / "attempts.jsonl")) {
      std::cerr << "kforge compare: " << d.string() << ": no attempts.jsonl\n";
      return 2;
    }
  ComparedRuns c = compare_runs(a, b);
  for (const auto& n : c.not_alike) std::cerr << "kforge compare: warning: " << n << "\n";
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
