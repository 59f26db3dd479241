#include "kforge/agent/evaluation.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "kforge/backends/resource_usage.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/sandbox/compile_cache.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

std::string utc_now() {
  auto now = std::chrono::system_clock::now();
  auto t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

backends::TaskRef task_ref(const Task& task, const std::string& profile) {
  backends::TaskRef r;
  r.id = task.id;
  r.file = task.file;
  auto src = apply_profile(task, profile);
  if (!src) throw std::invalid_argument("task " + task.id + " has no profile '" + profile + "'");
  r.source = *src;
  for (const auto& [dtype, tol] : task.tolerances) r.tolerances[dtype] = {tol.atol, tol.rtol};
  r.flops_expr = task.flops;
  r.bytes_expr = task.bytes;
  return r;
}

void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes) {
  rec.outcome = ev.outcome;
  rec.sub_kind = ev.sub_kind;
  auto lines = split_lines(ev.message);
  rec.message = lines.empty() ? "" : truncate_middle(lines.front(), 400);
  rec.compile_ms = ev.compile_ms;
  rec.compile_cached = ev.compile.cached;
  rec.check_ms = ev.check_ms;
  rec.bench_ms = ev.bench_ms;
  rec.seed = static_cast<std::uint64_t>(ev.seed);
  if (ev.check) {
    rec.trials = ev.check->trials;
    rec.trials_passed = ev.check->trials_passed;
    rec.max_abs_err = ev.check->max_abs_err;
    rec.max_rel_err = ev.check->max_rel_err;
    rec.mismatch_fraction = ev.check->mismatch_fraction;
  }
  if (ev.bench && ev.bench->ok) {
    const auto& b = *ev.bench;
    rec.t_candidate_ms = b.candidate_ms;
    rec.t_reference_ms = b.reference_ms;
    rec.t_candidate_p10_ms = b.candidate.p10_ms;
    rec.t_candidate_p90_ms = b.candidate.p90_ms;
    rec.cv = b.candidate.cv;
    rec.speedup = b.speedup;
    if (b.candidate_ms > 0) {
      rec.achieved_gbps = bytes / (b.candidate_ms * 1e-3) / 1e9;
      rec.achieved_tflops = flops / (b.candidate_ms * 1e-3) / 1e12;
    }
    rec.profile.t_reference_p10_ms = b.reference.p10_ms;
    rec.profile.t_reference_p90_ms = b.reference.p90_ms;
  }
  record_resources(rec, ev);
}

void record_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks, double flops,
                     double bytes) {
  if (!peaks || !rec.passed() || !(rec.t_candidate_ms > 0)) return;
  const Roofline r = roofline(rec.t_candidate_ms, bytes, flops, *peaks);
  rec.profile.peaks_device = peaks->device;
  rec.profile.peak_gbps = peaks->dram_bytes_per_s / 1e9;
  rec.profile.peak_tflops = peaks->flops_per_s / 1e12;
  rec.profile.dram_fraction = r.dram_fraction;
  rec.profile.flops_fraction = r.flops_fraction;
  rec.profile.bottleneck = r.bottleneck == Bottleneck::unknown ? "" : std::string(to_string(r.bottleneck));
  rec.profile.bottleneck_reason = r.reason;
}

double task_bytes(const backends::LoadResult& lr) {
  if (lr.bytes > 0) return lr.bytes;
  std::vector<TensorBytes> in, out;
  for (const auto& t : lr.inputs) in.push_back({{t.shape.begin(), t.shape.end()}, t.dtype});
  for (const auto& t : lr.outputs) out.push_back({{t.shape.begin(), t.shape.end()}, t.dtype});
  return io_bytes(in, out);
}

void record_resources(AttemptRecord& rec, const backends::Evaluation& ev) {
  if (rec.backend != "cuda" || !ev.compile.ok() || ev.compile.artifact.empty()) return;
  auto ru = backends::resource_usage(ev.compile.artifact, ev.compile.log);
  rec.profile.resources = std::move(ru.kernels);
  rec.profile.resources_note = ru.note;
  rec.profile.resources_ms = ru.ms;
}

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

int run_eval(const EvalCommand& cmd) {
  const backends::Backend* backend = backends::find_backend(cmd.backend);
  if (!backend) {
    std::cerr << "kforge eval: --backend " << cmd.backend << ": unknown backend (known: ";
    for (const auto& n : backends::backend_names()) std::cerr << n << " ";
    std::cerr << ")\n";
    return 2;
  }
  Suite suite;
  try {
    suite = load_suite(resolve_suite(cmd.suite));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: " << e.what() << "\n";
    return 2;
  }
  for (const auto& e : suite.skipped) spdlog::warn("skipped: {}", e.to_string());
  if (!fs::is_directory(cmd.kernels)) {
    std::cerr << "kforge eval: --kernels " << cmd.kernels.string() << ": not a directory\n";
    return 2;
  }
  if (!cmd.profile.empty() && cmd.profile != "default") {
    bool any = false;
    for (const auto& t : suite.tasks) any = any || t.profiles.count(cmd.profile);
    if (!any) {
      std::cerr << "kforge eval: --profile " << cmd.profile << ": no task of suite " << suite.name
                << " defines it\n";
      return 2;
    }
  }
  std::string device = cmd.device.empty() ? (cmd.backend == "cpu" ? "cpu" : "cuda:0") : cmd.device;
  std::string src_name = backend->source_file_name();

  // The kernels to evaluate: DIR/<task-id>/kernel.<ext>, for tasks of the suite.
  std::vector<const Task*> todo;
  for (const auto& t : suite.tasks) {
    if (!cmd.only.empty() && t.id.find(cmd.only) == std::string::npos) continue;
    if (fs::exists(cmd.kernels / t.id / src_name)) todo.push_back(&t);
  }
  if (todo.empty()) {
    std::cerr << "kforge eval: no " << src_name << " under " << cmd.kernels.string()
              << "/<task-id>/ matches a task of suite " << suite.name << "\n";
    return 2;
  }

  backends::RunnerConfig rc;
  rc.device = device;
  backends::RunnerClient runner(rc);
  std::string hello = runner.hello();
  if (hello.empty()) {
    std::cerr << "kforge eval: kforge-runner (" << runner.config().runner.string()
              << ") did not start; build it or set KFORGE_RUNNER\n";
    return 3;
  }
  nlohmann::json manifest{{"command", "eval"},
                          {"config",
                           {{"suite", suite.name},
                            {"suite_root", suite.root.string()},
                            {"backend", cmd.backend},
                            {"kernels", fs::absolute(cmd.kernels).string()},
                            {"profile", cmd.profile.empty() ? "default" : cmd.profile},
                            {"trials", cmd.trials},
                            {"bench", cmd.bench},
                            {"reps", cmd.reps},
                            {"baseline", cmd.baseline},
                            {"device", device}}},
                          {"runner", nlohmann::json::parse(hello)}};
  std::optional<RunDir> run;
  try {
    if (fs::exists(cmd.out / "manifest.json"))
      run.emplace(RunDir::open_for_resume(cmd.out));
    else
      run.emplace(RunDir::create(cmd.out, manifest));
  } catch (const std::exception& e) {
    std::cerr << "kforge eval: --out " << cmd.out.string() << ": " << e.what() << "\n";
    return 2;
  }

  backends::EvalOptions opt;
  opt.trials = cmd.trials;
  opt.bench = cmd.bench;
  opt.bench_options.reps = cmd.reps;
  opt.bench_options.compile_baseline = cmd.baseline == "compile";
  opt.compile.arch = cmd.arch;
  opt.compile.cache_dir = sandbox::CompileCache::default_dir();

  std::printf("%-44s %-16s %-22s %10s %10s %8s\n", "task", "outcome", "sub_kind", "cand ms", "ref ms",
              "speedup");
  int passed = 0, infra = 0, done = 0;
  for (const Task* t : todo) {
    if (run->is_finished({t->id, 0, 1})) continue;
    backends::TaskRef ref;
    try {
      ref = task_ref(*t, cmd.profile);
    } catch (const std::exception& e) {
      spdlog::warn("{}: {}", t->id, e.what());
      continue;
    }
    AttemptRecord rec;
    rec.task = t->id;
    rec.category = t->category;
    rec.difficulty = t->difficulty;
    rec.backend = cmd.backend;
    rec.started_at = utc_now();
    auto t0 = std::chrono::steady_clock::now();
    std::string source = read_file(cmd.kernels / t->id / src_name);
    rec.source_sha = sha256_hex(source);
    fs::path workdir = run->attempt_path(t->id, 0, 1);
    backends::Evaluation ev = backends::evaluate(*backend, source, workdir, runner, ref, opt);
    backends::LoadResult lr = runner.load(ref);
    fill_record(rec, ev, lr.flops, task_bytes(lr));
    rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rec.finished_at = utc_now();
    rec.attempt_dir = attempt_rel_path(t->id, 0, 1).string();
    nlohmann::json result{{"outcome", to_string(ev.outcome)},
                          {"sub_kind", ev.sub_kind},
                          {"message", ev.message},
                          {"compile_log", ev.compile.log}};
    run->write_attempt_file(t->id, 0, 1, "result.json", result.dump(2));
    if (!ev.compile.log.empty()) run->write_attempt_file(t->id, 0, 1, "build.log", ev.compile.log);
    run->append(rec);
    ++done;
    passed += ev.outcome == Outcome::pass;
    infra += ev.infrastructure_error;
    std::printf("%-44s %-16s %-22s %10s %10s %8s\n", t->id.c_str(),
                std::string(to_string(ev.outcome)).c_str(), ev.sub_kind.c_str(),
                rec.t_candidate_ms > 0 ? fmt("%.4f", rec.t_candidate_ms).c_str() : "-",
                rec.t_reference_ms > 0 ? fmt("%.4f", rec.t_reference_ms).c_str() : "-",
                rec.speedup > 0 ? fmt("%.2fx", rec.speedup).c_str() : "-");
    if (ev.outcome != Outcome::pass) spdlog::info("{}: {}", t->id, truncate_middle(ev.message, 600));
    std::fflush(stdout);
  }
  std::printf("\n%d/%d passed (%d evaluated now, %zu recorded in %s)\n", passed, done, done,
              run->attempt_count(), (cmd.out / "attempts.jsonl").string().c_str());
  if (infra > 0) {
    std::cerr << "kforge eval: " << infra << " kernel(s) could not be judged (toolchain or runner failure)\n";
    return 3;
  }
  return 0;
}

}  // namespace kforge::agent
