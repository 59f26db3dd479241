// bench_eval: one full evaluation of a candidate (compile, 5 trials, timing of candidate and
// reference), with a per-phase breakdown. Default: activation/gelu_tanh at its `large`
// profile (4 GiB of input) on cuda:0. Target (issue 3): <= 10 s wall on an H100.
// Usage: bench_eval [out.json] [backend] [profile] [task] [suite] [kernel source]
// (suite: a name or directory, default kforge-core; source: default the task's exemplar)
#include <filesystem>
#include <nlohmann/json.hpp>

#include "bench_util.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/evaluate.hpp"

using namespace kforge;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::string backend_name = argc > 2 ? argv[2] : "cuda";
  std::string profile = argc > 3 ? argv[3] : "large";
  std::string task_id = argc > 4 ? argv[4] : "activation/gelu_tanh";
  Suite suite = load_suite(resolve_suite(argc > 5 ? argv[5] : "kforge-core"));
  const Task* task = suite.find(task_id);
  if (!task) return std::fprintf(stderr, "no task %s\n", task_id.c_str()), 1;
  const auto& backend = backends::get_backend(backend_name);
  std::string source = read_file(argc > 6 ? fs::path(argv[6])
                                          : kforge_home() / "prompts/exemplars" / backend_name / task_id /
                                                backend.source_file_name());
  backends::RunnerConfig rc;
  rc.device = backend_name == "cpu" ? "cpu" : "cuda:0";
  backends::RunnerClient runner(rc);
  auto t_start = std::chrono::steady_clock::now();
  runner.hello();
  double start_ms = bench::ms_since(t_start);
  auto ref = agent::task_ref(*task, profile);
  auto t0 = std::chrono::steady_clock::now();
  auto lr = runner.load(ref);
  double load_ms = bench::ms_since(t0);
  if (!lr) return std::fprintf(stderr, "load failed: %s\n", lr.failure().message.c_str()), 1;
  fs::path work = fs::temp_directory_path() / "kforge-bench-eval";
  fs::remove_all(work);
  backends::EvalOptions opt;
  opt.trials = 5;
  opt.compile.cache_dir = work / "cache";  // cold
  auto t1 = std::chrono::steady_clock::now();
  auto ev = backends::evaluate(backend, source, work / "attempt", runner, ref, opt);
  double eval_ms = bench::ms_since(t1);
  std::printf("task %s, profile %s, input %.2f GiB, outcome %s %s\n", task_id.c_str(), profile.c_str(),
              static_cast<double>(lr->input_bytes) / (1 << 30), std::string(to_string(ev.outcome)).c_str(),
              ev.sub_kind.c_str());
  std::printf("%-34s %10s\n", "phase", "ms");
  std::printf("%-34s %10.1f\n", "worker start (import torch)", start_ms);
  std::printf("%-34s %10.1f\n", "task load (model + probe run)", load_ms);
  std::printf("%-34s %10.1f\n", "compile (cold cache)", ev.compile_ms);
  std::printf("%-34s %10.1f\n", "check (5 trials)", ev.check_ms);
  if (ev.check)
    for (const auto& [k, v] : ev.check->phases_ms) std::printf("  check: %-26s %10.1f\n", k.c_str(), v);
  std::printf("%-34s %10.1f\n", "bench (candidate + reference)", ev.bench_ms);
  if (ev.bench)
    for (const auto& [k, v] : ev.bench->phases_ms) std::printf("  bench: %-26s %10.1f\n", k.c_str(), v);
  std::printf("%-34s %10.1f\n", "evaluation total (compile..bench)", eval_ms);
  if (ev.bench && ev.bench->ok)
    std::printf(
        "candidate %.4f ms, reference %.4f ms, speedup %.2fx [%.2f, %.2f]; speed of light %.4f ms at the "
        "measured peak %.1f GB/s%s%s\n",
        ev.bench->candidate_ms, ev.bench->reference_ms, ev.bench->speedup, ev.bench->speedup_ci_low,
        ev.bench->speedup_ci_high, ev.bench->speed_of_light_ms, ev.bench->peak_bytes_per_s / 1e9,
        ev.bench->timing_anomaly.empty() ? "" : "; timing_anomaly: ", ev.bench->timing_anomaly.c_str());
  bench::write_json(argc, argv, "eval",
                    {{"task", task_id},
                     {"profile", profile},
                     {"backend", backend_name},
                     {"input_bytes", lr->input_bytes},
                     {"outcome", to_string(ev.outcome)},
                     {"sub_kind", ev.sub_kind},
                     {"message", ev.message},
                     {"worker_start_ms", start_ms},
                     {"load_ms", load_ms},
                     {"compile_ms", ev.compile_ms},
                     {"check_ms", ev.check_ms},
                     {"bench_ms", ev.bench_ms},
                     {"evaluation_ms", eval_ms},
                     {"check_phases_ms", ev.check ? ev.check->phases_ms : std::map<std::string, double>{}},
                     {"bench_phases_ms", ev.bench ? ev.bench->phases_ms : std::map<std::string, double>{}},
                     {"speedup", ev.bench && ev.bench->ok ? ev.bench->speedup : 0.0}});
  return ev.outcome == Outcome::pass ? 0 : 1;
}
