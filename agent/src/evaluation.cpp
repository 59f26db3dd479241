#include "kforge/agent/evaluation.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/agent/kernelbench_import.hpp"
#include "kforge/agent/ports.hpp"
#include "kforge/agent/run_checks.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/agent/scheduler.hpp"
#include "kforge/backends/python_traceback.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/run_status.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

namespace {

/// One info line per profiled pass: the bottleneck, the top finding, the kernels and the note.
void log_profile(const AttemptRecord& rec) {
  const auto& p = rec.profile;
  if (!rec.passed() || (p.bottleneck.empty() && p.findings.empty() && p.profiler_note.empty())) return;
  std::string s = p.bottleneck.empty() ? "" : p.bottleneck + " (" + p.bottleneck_reason + ")";
  if (!p.findings.empty())
    s += "; top finding: " + p.findings[0].label + " - " + p.findings[0].interpretation;
  if (!p.candidate_kernels.empty())
    s += "; " + std::to_string(p.candidate_kernels.size()) + " kernel(s), profiled in " +
         format_double("%.0f", p.profiler_ms) + " ms";
  if (!p.profiler_note.empty()) s += "; " + p.profiler_note;
  spdlog::info("{}: {}", rec.task, s);
}

}  // namespace

KernelSamples find_kernel_samples(const fs::path& task_dir, const std::string& source_file) {
  KernelSamples ks;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(task_dir, ec)) {
    if (!e.is_directory(ec) || !fs::is_regular_file(e.path() / source_file, ec)) continue;
    const std::string name = e.path().filename().string();
    if (name.empty() || name.size() > 6 ||
        !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      ks.errors.push_back((e.path() / source_file).string() +
                          ": not a sample (a sample's folder is named by its index: 0, 1, 2, ...)");
      continue;
    }
    ks.samples.emplace_back(std::stoi(name), e.path() / source_file);
  }
  if (fs::is_regular_file(task_dir / source_file, ec)) ks.samples.emplace_back(0, task_dir / source_file);
  std::sort(ks.samples.begin(), ks.samples.end());
  // Two files for one index ("0/" beside a top-level kernel, or "1/" and "01/"): neither is judged.
  for (std::size_t i = 0; i + 1 < ks.samples.size();) {
    if (ks.samples[i].first != ks.samples[i + 1].first) {
      ++i;
      continue;
    }
    const int dup = ks.samples[i].first;
    std::string files;
    for (const auto& [s, f] : ks.samples)
      if (s == dup) files += (files.empty() ? "" : " and ") + f.string();
    ks.errors.push_back(files + ": two kernels for sample " + std::to_string(dup) + "; neither is judged");
    std::erase_if(ks.samples, [dup](const auto& p) { return p.first == dup; });
  }
  return ks;
}

namespace {

/// One kernel file to judge: a task's sample.
struct EvalItem {
  const Task* task = nullptr;
  int sample = 0;
  fs::path file;
};

/// What `kforge eval` sets up before judging: one owner, run_eval's frame.
struct EvalSetup {
  const backends::Backend* backend = nullptr;
  Suite suite;
  std::vector<EvalItem> todo;
  std::vector<std::unique_ptr<backends::RunnerClient>> runners;  ///< one per judge slot (--devices)
  std::string hello;                                             ///< the first runner's
  std::optional<RunDir> run;
  std::unique_ptr<ProfileStep> profile;
  AttemptSetup attempt;
  std::deque<TaskJudging> judging;  ///< stable addresses: the episodes point here
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();  ///< this invocation's
};

/// The backend, the suite and the kernels to judge. 0 or 2.
int select_kernels(const EvalCommand& cmd, EvalSetup& es) {
  es.backend = backends::find_backend(cmd.backend);
  if (!es.backend) {
    std::cerr << "kforge eval: --backend " << cmd.backend << ": unknown backend (known: ";
    for (const auto& n : backends::backend_names()) std::cerr << n << " ";
    std::cerr << ")\n";
    return 2;
  }
  try {
    es.suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: " << e.what() << "\n";
    return 2;
  }
  for (const auto& e : es.suite.skipped) spdlog::warn("skipped: {}", e.to_string());
  if (!fs::is_directory(cmd.kernels)) {
    std::cerr << "kforge eval: --kernels " << cmd.kernels.string() << ": not a directory\n";
    return 2;
  }
  std::vector<const Task*> all;
  for (const auto& t : es.suite.tasks) all.push_back(&t);
  if (auto why = profile_problem(all, cmd.profile, es.suite.name)) {
    std::cerr << "kforge eval: " << *why << "\n";
    return 2;
  }
  const std::string src_name = es.backend->source_file_name();
  // A kernel folder that names no task is an error, not a task lost from the denominators.
  if (const auto bad = unmatched_kernel_folders(cmd.kernels, es.suite, src_name); !bad.empty()) {
    for (const auto& b : bad)
      std::cerr << "kforge eval: --kernels " << cmd.kernels.string() << ": folder " << b
                << " names no task of suite " << es.suite.name << "\n";
    return 2;
  }
  for (const auto& t : es.suite.tasks) {
    if (!cmd.only.empty() && t.id.find(cmd.only) == std::string::npos) continue;
    const KernelSamples ks = find_kernel_samples(cmd.kernels / t.id, src_name);
    for (const auto& e : ks.errors) std::cerr << "kforge eval: " << e << "\n";
    for (const auto& [sample, file] : ks.samples) es.todo.push_back({&t, sample, file});
  }
  if (es.todo.empty()) {
    std::cerr << "kforge eval: no " << src_name << " under " << cmd.kernels.string()
              << "/<task-id>/ or <task-id>/<sample>/ matches a task of suite " << es.suite.name << "\n";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(cmd.kernels, ec))
      if (parse_generation_name(e.path().filename().string())) {
        std::cerr << "kforge eval: " << cmd.kernels.string()
                  << " holds KernelBench generations (level_<L>_problem_<P>_sample_<S>_kernel.py): turn them "
                     "into kernels with `kforge import-kernelbench --suite "
                  << cmd.suite << " --generations " << cmd.kernels.string() << " --out KERNELS` first\n";
        break;
      }
    return 2;
  }
  return 0;
}

/// The manifest's "config" of an eval: run's keys where run has the option (run_options.hpp).
nlohmann::json eval_config(const EvalCommand& cmd, const Suite& suite, const std::string& device,
                           const std::vector<std::string>& slots) {
  return {{"suite", suite.name},
          {"suite_root", suite.root.string()},
          {"backend", cmd.backend},
          {"kernels", fs::absolute(cmd.kernels).string()},
          {"profile", cmd.profile.empty() ? "default" : cmd.profile},
          {"trials", cmd.trials},
          {"bench", cmd.bench},
          {"reps", cmd.reps},
          {"perf_inputs", cmd.perf_inputs},
          {"baseline", cmd.baseline},
          {"allow_precision", cmd.allow_precision},
          {"allow_ops", cmd.allow_ops},
          {"device", device},
          {"devices", slots}};
}

/// An existing --out: only an eval's, judged with the same result-changing options (before any
/// runner starts). 0 or 2.
int check_eval_out(const EvalCommand& cmd, const EvalSetup& es) {
  std::error_code ec;
  if (!fs::exists(cmd.out / "manifest.json", ec)) return 0;
  std::optional<std::string> why;
  try {
    why = eval_resume_problem(nlohmann::json::parse(read_file(cmd.out / "manifest.json")),
                              eval_config(cmd, es.suite, "", {}));
  } catch (const std::exception& e) {
    why = std::string("manifest.json: ") + e.what();
  }
  if (!why) return 0;
  std::cerr << "kforge eval: --out " << cmd.out.string() << ": " << *why << "\n";
  return 2;
}

/// The runner and the run directory. 0, 2 or 3.
int open_eval(const EvalCommand& cmd, EvalSetup& es) {
  // The builds' own start-up (the triton backend's warm scanners) while the runners start.
  es.backend->prewarm(std::clamp(static_cast<int>(es.todo.size()), 1, std::max(1, cmd.jobs)),
                      backends::CompileOptions{});
  StartedRunners started = start_runners(cmd.devices, cmd.device, *es.backend, "kforge eval");
  if (started.rc) return started.rc;
  es.runners = std::move(started.runners);
  es.hello = started.first_hello;
  const std::string device = es.runners[0]->config().device;
  std::vector<std::string> slots;
  for (const auto& r : es.runners) slots.push_back(r->config().device);
  nlohmann::json manifest{{"command", "eval"},
                          {"config", eval_config(cmd, es.suite, device, slots)},
                          {"runner", nlohmann::json::parse(es.hello)},
                          {"devices", started.devices}};
  try {
    if (fs::exists(cmd.out / "manifest.json"))
      es.run.emplace(RunDir::open_for_resume(cmd.out));
    else
      es.run.emplace(RunDir::create(cmd.out, manifest));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: --out " << cmd.out.string() << ": " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// The profile step, before the run directory exists (a profiler that cannot be used leaves
/// nothing behind). 0 or 2.
int make_eval_profile(const EvalCommand& cmd, EvalSetup& es) {
  try {
    es.profile = make_profile_step(cmd.profiler, cmd.backend, cmd.bench);
    es.profile->failing = cmd.profile_failing;
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

/// The judging setup: options, the profile step's use and the device's peaks.
int make_eval_setup(const EvalCommand& cmd, EvalSetup& es) {
  AttemptSetup& a = es.attempt;
  set_judging(a, es.backend, cmd.backend, es.profile.get(),
              {cmd.trials, cmd.bench, cmd.reps, cmd.perf_inputs, cmd.baseline, cmd.allow_precision});
  const std::string device = es.runners[0]->config().device;
  if (es.profile->profiler != "none")
    a.peaks = device_peaks(*es.runners[0],
                           device_facts(nlohmann::json::parse(es.hello, nullptr, false), device).name);
  a.opt.compile.arch = cmd.arch;
  return 0;
}

/// "pass@k over 2 task(s), 6 sample(s): pass@1 0.500, pass@2 0.917, ..." from every record
/// of the run directory (this invocation's and those skipped as unchanged): the unbiased
/// estimator (benchmarks/metrics.hpp, Chen et al. 2021) for every k up to the samples.
std::string pass_at_k_line(const fs::path& out) {
  const Summary s = summarize(load_attempts(out).records);
  const Scores& b = s.overall.best;
  if (b.pass_at_k.empty()) return "";
  std::string line =
      "pass@k over " + std::to_string(b.tasks) + " task(s), " + std::to_string(b.episodes) + " sample(s):";
  for (const auto& [k, v] : b.pass_at_k)
    line += (k > 1 ? ", pass@" : " pass@") + std::to_string(k) + " " + format_double("%.3f", v);
  return line;
}

void print_row(const AttemptRecord& rec) {
  std::printf("%-44s %6d %-16s %-22s %10s %10s %8s\n", rec.task.c_str(), rec.sample,
              std::string(to_string(rec.outcome)).c_str(), rec.sub_kind.c_str(),
              rec.t_candidate_ms > 0 ? format_double("%.4f", rec.t_candidate_ms).c_str() : "-",
              rec.t_reference_ms > 0 ? format_double("%.4f", rec.t_reference_ms).c_str() : "-",
              rec.speedup > 0 ? format_double("%.2fx", rec.speedup).c_str() : "-");
  std::fflush(stdout);
}

/// Eval's store: the one attempt writer, then the table's row and the log lines, on the
/// scheduler's thread as each attempt finishes. Collects the tasks found unusable.
class EvalStore final : public StorePort {
 public:
  explicit EvalStore(RunDir& run) : run_(run), inner_(make_store_port(run)) {}
  void record(const AttemptRecord& rec, const AttemptFiles& files) override {
    inner_->record(rec, files);
    const std::string message = files.result.value("message", rec.message);
    if (rec.outcome != Outcome::pass) spdlog::info("{}: {}", rec.task, truncate_middle(message, 600));
    log_profile(rec);
    if (rec.failure == FailureKind::reference) unusable[rec.task] = rec.message;
    print_row(rec);
  }
  fs::path attempt_dir(const AttemptRecord& rec) const override { return inner_->attempt_dir(rec); }
  std::map<std::string, std::string> unusable;  ///< task -> why its reference cannot be used

 private:
  RunDir& run_;
  std::unique_ptr<StorePort> inner_;
};

/// Eval asks no LLM and shows no prompt: a given candidate's episode never renders.
class NoRender final : public RenderPort {
 public:
  prompts::Prompt render(const EpisodeState&) override {
    throw std::logic_error("kforge eval renders no prompt");
  }
  void learned(const EpisodeState&) override {}
};

/// The tasks to judge now: each with its kernel's source. Unchanged kernels already judged in
/// the run directory are skipped (listed in `unchanged`).
std::vector<EpisodeSpec> eval_episodes(const EvalCommand& cmd, EvalSetup& es,
                                       std::vector<std::string>& unchanged) {
  // Only model outcomes of the same source are final: an infra_error attempt, and a kernel whose
  // file changed since it was judged, are judged again (the later record supersedes the earlier).
  std::map<AttemptKey, std::string> judged;  // key -> source_sha of its last model-outcome record
  for (const auto& r : es.run->load_attempts())
    if (is_model_outcome(r.outcome)) judged[key_of(r)] = r.source_sha;
  std::vector<EpisodeSpec> out;
  std::map<const Task*, TaskJudging*> judging;  // one per task, shared by its samples
  for (const EvalItem& item : es.todo) {
    const Task* t = item.task;
    const std::string name = t->id + (item.sample ? "#" + std::to_string(item.sample) : "");
    std::string source = read_file(item.file);
    if (auto it = judged.find({t->id, item.sample, 1}); it != judged.end()) {
      if (it->second == sha256_hex(source)) {
        unchanged.push_back(name);
        continue;
      }
      spdlog::info("{}: the kernel changed since it was judged in {}: judging it again", name,
                   cmd.out.string());
    }
    if (!judging.count(t)) {
      TaskJudging tj{t, {}, {}, {}};
      try {
        tj.ref = task_ref_for(*t, cmd.profile, cmd.allow_ops);
      } catch (const std::exception& e) {
        spdlog::warn("{}: {}", t->id, e.what());
        judging[t] = nullptr;
        continue;
      }
      tj.module_suffix = module_suffix_for(es.attempt, *t);  // an operator task's adapter
      judging[t] = &es.judging.emplace_back(std::move(tj));
    }
    if (TaskJudging* tj = judging[t]) out.push_back({tj, item.sample, 1, 0.0, {}, std::move(source)});
  }
  return out;
}

/// Judges the episodes on the one scheduler `kforge run` uses: cmd.jobs compiles at once, one
/// judge slot per runner (--devices). Returns the tally; `store` has printed the rows.
RunTally judge_episodes(const EvalCommand& cmd, EvalSetup& es, std::vector<EpisodeSpec> episodes,
                        EvalStore& store) {
  std::vector<backends::RunnerClient*> runners;
  for (auto& r : es.runners) runners.push_back(r.get());
  auto build = make_build_port(es.attempt, std::max(1, cmd.jobs));
  auto judge = make_judge_port(es.attempt, runners);
  NoRender render;
  auto clock = make_clock_port();
  MachineConfig mc;
  mc.turns = 1;
  mc.backend = cmd.backend;
  mc.source_file = es.backend->source_file_name();
  mc.profile_every_pass = true;  // one attempt per task: every pass is its episode's best
  SchedulerConfig sc;
  sc.llm_concurrency = 1;
  sc.compile_jobs = std::max(1, cmd.jobs);
  sc.max_llm_failures = 0;
  sc.max_infra_failures = 0;  // eval judges every kernel; infra_errors are counted at the end
  sc.handle_signals = true;
  boost::asio::io_context io;
  Scheduler sched(io, {nullptr, build.get(), judge.get(), &render, &store, clock.get()}, mc, sc);
  for (auto& e : episodes) sched.add(std::move(e));
  return sched.run();
}

}  // namespace

std::map<std::string, AttemptRecord> eval_records(const fs::path& out) {
  std::map<std::string, AttemptRecord> m;
  for (auto& r : load_attempts(out).records) m[r.task] = std::move(r);
  return m;
}

int run_eval(const EvalCommand& cmd) {
  EvalSetup es;
  if (int rc = select_kernels(cmd, es)) return rc;
  if (int rc = check_eval_out(cmd, es)) return rc;
  if (int rc = make_eval_profile(cmd, es)) return rc;
  if (int rc = open_eval(cmd, es)) return rc;
  if (int rc = make_eval_setup(cmd, es)) return rc;
  record_invocation(*es.run, 0, false);  // being written: incomplete until the end says otherwise
  std::printf("%-44s %6s %-16s %-22s %10s %10s %8s\n", "task", "sample", "outcome", "sub_kind", "cand ms",
              "ref ms", "speedup");
  std::vector<std::string> unchanged;  // tasks skipped: judged before, same source
  EvalStore store(*es.run);
  const RunTally tally = judge_episodes(cmd, es, eval_episodes(cmd, es, unchanged), store);
  const int passed = tally.passes, infra = tally.infra_errors, done = tally.attempts;
  TritonBenchTally tb = tally.tritonbench;
  tb.interpreter = es.runners[0]->config().device == "cpu";
  std::map<std::string, std::string> unusable = store.unusable;  // task -> why its reference cannot be used
  for (const auto& [task, why] : tally.unusable) unusable.emplace(task, why);
  // A test block's reference that failed on a fresh worker: the task is unusable (its
  // traceback is in result.json's message).
  for (const auto& tj : es.judging)
    for (const auto& r : es.runners)
      if (auto it = r->unusable().find(tj.task->id); it != r->unusable().end())
        unusable.emplace(tj.task->id, "the reference failed its test block: " + it->second);
  write_unusable(cmd.out, unusable);
  record_invocation(*es.run,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - es.started).count(),
                    !tally.interrupted);
  if (!unchanged.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unchanged.size() && i < 20; ++i) list += (i ? ", " : "") + unchanged[i];
    if (unchanged.size() > 20) list += ", ...";
    std::printf("skipped %zu unchanged kernel(s) already judged in %s: %s\n", unchanged.size(),
                cmd.out.string().c_str(), list.c_str());
  }
  std::printf("\n%d/%d passed (%d evaluated now, %zu recorded in %s)\n", passed, done - infra, done,
              es.run->attempt_count(), (cmd.out / "attempts.jsonl").string().c_str());
  if (const std::string line = pass_at_k_line(cmd.out); !line.empty()) std::printf("%s\n", line.c_str());
  if (const std::string line = tb.line(); !line.empty()) std::printf("%s\n", line.c_str());
  for (const auto& [task, why] : unusable)
    std::cerr << "kforge eval: task " << task << " is unusable: " << truncate_middle(why, 600) << "\n";
  if (!unusable.empty())
    std::printf("%zu task(s) unusable: the reference failed on a fresh worker (listed in %s)\n",
                unusable.size(), (cmd.out / "unusable.json").string().c_str());
  if (tally.interrupted) {
    std::cerr << "kforge eval: interrupted; the kernels judged so far are recorded in " << cmd.out.string()
              << " (run the same command again to judge the rest)\n";
    return 130;
  }
  if (infra > 0) {
    std::printf(
        "%d attempt(s) could not be judged (infra_error: kforge's toolchain, runner or reference "
        "failed; not scored)\n",
        infra);
    std::cerr << "kforge eval: " << infra
              << " attempt(s) could not be judged (infra_error: toolchain, runner or reference failure)\n";
    return kExitInfraError;
  }
  return 0;
}

}  // namespace kforge::agent
