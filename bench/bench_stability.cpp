// bench_stability: one honest kernel judged N times (default 5) on a machine loaded on purpose,
// printing each judgement's speedup and whether the judge marked it timing_unstable (issue 39
// §3; docs/judge.md, "Timing and peaks"). Done when the speedups not marked lie within ±25% of
// their median, or are marked. Also shows the speedup against the run's estimate of the
// reference (agent::ReferenceTimes), which is what the next turn's prompt states.
//
// Usage: bench_stability [--out F.json] [--backend cpu|cuda] [--suite S] [--task T]
//                        [--profile P] [--source kernel] [--judgements N]
//                        [--load compile|spin|none] [--jobs N]
// Defaults: cpu, kforge-core, matmul/gemm, profile ci, the backend's exemplar, 5 judgements,
// a parallel compile as the load, 2 jobs per CPU. The load: `jobs` shell loops each compiling
// a C++ file (<regex> and <map> instantiations, g++ -O2) again and again, or spinning; all are
// started before the first judgement and ended (their process group) after the last.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "bench_util.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/agent/reference_times.hpp"
#include "kforge/backends/evaluate.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Options {
  std::string out = "bench-stability.json", backend = "cpu", suite = "kforge-core", task = "matmul/gemm";
  std::string profile = "ci", source, load = "compile";
  int judgements = 5, jobs = 0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_stability: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--out")
      o.out = value();
    else if (a == "--backend")
      o.backend = value();
    else if (a == "--suite")
      o.suite = value();
    else if (a == "--task")
      o.task = value();
    else if (a == "--profile")
      o.profile = value();
    else if (a == "--source")
      o.source = value();
    else if (a == "--judgements")
      o.judgements = std::atoi(value().c_str());
    else if (a == "--load")
      o.load = value();
    else if (a == "--jobs")
      o.jobs = std::atoi(value().c_str());
    else {
      std::fprintf(stderr, "bench_stability: unknown option %s (see the file's header)\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.load != "compile" && o.load != "spin" && o.load != "none") {
    std::fprintf(stderr, "bench_stability: --load must be compile, spin or none\n");
    std::exit(2);
  }
  if (o.jobs <= 0) o.jobs = 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

/// The load: `jobs` shell loops in one process group of their own; returns its id (0: none).
pid_t start_load(const Options& o, const fs::path& work) {
  if (o.load == "none") return 0;
  const fs::path src = work / "load.cpp";
  write_file(
      src,
      "#include <map>\n#include <regex>\n#include <string>\n#include <vector>\n"
      "int f(const std::string& s) { std::regex r(\"([a-z]+)@([0-9]+)\"); std::smatch m;"
      " std::map<std::string, std::vector<int>> v; if (std::regex_search(s, m, r)) v[m[1]].push_back(1);"
      " return static_cast<int>(v.size()); }\n");
  const std::string loop = o.load == "spin" ? "while :; do :; done"
                                            : "while :; do g++ -O2 -std=c++17 -c -o /dev/null '" +
                                                  src.string() + "' 2>/dev/null; done";
  const pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    // Each loop dies with its parent, and the group's leader with this program: a bench stopped
    // by a signal (a `timeout`) leaves no load behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setpgid(0, 0);
    for (int j = 1; j < o.jobs; ++j)
      if (fork() == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execl("/bin/sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
      }
    execl("/bin/sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

void stop_load(pid_t pgid) {
  if (pgid <= 0) return;
  kill(-pgid, SIGTERM);
  while (waitpid(pgid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each judgement's line as it comes, also into a pipe
  const Options o = parse(argc, argv);
  const Suite suite = load_suite(resolve_suite(o.suite));
  const Task* task = suite.find(o.task);
  if (!task)
    return std::fprintf(stderr, "bench_stability: no task %s in %s\n", o.task.c_str(), o.suite.c_str()), 2;
  const auto& backend = backends::get_backend(o.backend);
  const fs::path kernel = !o.source.empty() ? fs::path(o.source)
                                            : kforge_home() / "prompts/exemplars" / o.backend / o.task /
                                                  backend.source_file_name();
  const std::string source = read_file(kernel);
  backends::RunnerConfig rc;
  rc.device = backend.on_gpu() ? "cuda:0" : "cpu";
  backends::RunnerClient runner(rc);
  const backends::TaskRef ref = agent::task_ref(*task, o.profile);
  if (auto lr = runner.load(ref); !lr)
    return std::fprintf(stderr, "load failed: %s\n", lr.failure().message.c_str()), 1;
  const fs::path work = fs::temp_directory_path() / ("kforge-bench-stability-" + std::to_string(getpid()));
  fs::create_directories(work);
  backends::EvalOptions opt;
  opt.trials = 2;
  opt.compile.cache_dir = work / "cache";
  // The kernel compiled before the load starts; every judgement then hits the cache.
  backends::compile_candidate(backend, source, work / "warm", opt);
  const pid_t load = start_load(o, work);
  std::this_thread::sleep_for(std::chrono::seconds(load ? 3 : 0));  // the load under way
  agent::ReferenceTimes run_refs;
  json rows = json::array();
  std::vector<double> stable;
  int marked = 0;
  std::printf("%s %s --profile %s on %s, load: %s x%d\n", o.backend.c_str(), o.task.c_str(),
              o.profile.c_str(), rc.device.c_str(), o.load.c_str(), load ? o.jobs : 0);
  std::printf("%3s %11s %11s %11s %8s %6s %8s  %s\n", "#", "cand ms", "ref ms", "ref-bef ms", "speedup",
              "timed", "vs run", "timing_unstable");
  for (int i = 0; i < o.judgements; ++i) {
    auto ev = backends::evaluate(backend, source, work / std::to_string(i), runner, ref, opt);
    if (ev.outcome != Outcome::pass || !ev.bench || !ev.bench->ok) {
      std::printf("%3d %s: %s\n", i + 1, std::string(to_string(ev.outcome)).c_str(), ev.message.c_str());
      rows.push_back({{"outcome", std::string(to_string(ev.outcome))}, {"message", ev.message}});
      continue;
    }
    const auto& b = *ev.bench;
    AttemptRecord rec;
    rec.task = o.task;
    rec.outcome = Outcome::pass;
    rec.t_reference_ms = b.reference_ms;
    rec.timing_unstable = b.timing_unstable;
    run_refs.note(rec);
    const double vs_run = rec.t_reference_run_ms > 0 ? rec.t_reference_run_ms / b.candidate_ms : 0;
    if (b.timing_unstable.empty())
      stable.push_back(b.speedup);
    else
      ++marked;
    std::printf("%3d %11.4f %11.4f %11.4f %7.2fx %6d %7.2fx  %s\n", i + 1, b.candidate_ms, b.reference_ms,
                b.reference_before_ms, b.speedup, b.timings, vs_run,
                b.timing_unstable.empty() ? "-" : b.timing_unstable.c_str());
    rows.push_back({{"candidate_ms", b.candidate_ms},
                    {"candidate_cv", b.candidate.cv},
                    {"reference_ms", b.reference_ms},
                    {"reference_cv", b.reference.cv},
                    {"reference_before_ms", b.reference_before_ms},
                    {"speedup", b.speedup},
                    {"speedup_vs_run_reference", vs_run},
                    {"timings", b.timings},
                    {"timing_unstable", b.timing_unstable}});
  }
  stop_load(load);
  const double med = bench::median(stable);
  // Nothing judged (every judgement failed) shows nothing about timing: not met.
  bool within = !stable.empty() || marked > 0;
  for (double s : stable) within = within && std::abs(s / med - 1) <= 0.25;
  std::printf("stable speedups: %zu (median %.2fx, min %.2fx, max %.2fx); marked timing_unstable: %d\n",
              stable.size(), med, stable.empty() ? 0 : *std::min_element(stable.begin(), stable.end()),
              stable.empty() ? 0 : *std::max_element(stable.begin(), stable.end()), marked);
  std::printf("done when the unmarked speedups lie within +-25%% of their median: %s\n",
              within                          ? "met"
              : stable.empty() && marked == 0 ? "NOT met (no judgement was timed)"
                                              : "NOT met");
  json j{{"backend", o.backend},       {"task", o.task},     {"profile", o.profile}, {"load", o.load},
         {"jobs", load ? o.jobs : 0},  {"judgements", rows}, {"stable_median", med}, {"marked", marked},
         {"within_25_percent", within}};
  write_file(o.out, j.dump(2));
  std::printf("wrote %s\n", o.out.c_str());
  fs::remove_all(work);
  return within ? 0 : 1;
}
