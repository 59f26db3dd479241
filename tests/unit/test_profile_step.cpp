// [runner][profile] issue 11 §1, the ncu part of the profile step without a GPU: the judge's
// profile files and command lines (profile_setup), the candidate host's profile mode (one
// confined untimed call and one profiled call; a forbidden syscall is still stopped), the
// runner's reference-call mode, and NcuProfiler/record_profiler against a fake `ncu` that
// checks its arguments, writes a recorded CSV and runs the target. Live ncu runs on the GPU
// machine (scripts/gpu-check).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "catch.hpp"
#include "kforge/agent/evaluation.hpp"
#include "kforge/backends/profile_step.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

backends::RunnerConfig cpu_runner() {
  backends::RunnerConfig rc;
  rc.device = "cpu";
  return rc;
}

/// The adversarial task (out = relu(x) * 2 + y) and a compiled cpu kernel of its folder.
struct Compiled {
  backends::TaskRef task;
  fs::path artifact;
};
Compiled compile_adversarial(const std::string& kernel, const fs::path& work) {
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/adversarial";
  auto parsed = parse_task_file(dir / "task.py", "adversarial/relu2_add");
  REQUIRE(parsed.task);
  backends::CompileOptions co;
  co.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  auto cr = backends::compile(backends::get_backend("cpu"), read_file(dir / kernel / "kernel.cpp"), work, co);
  INFO(cr.log);
  REQUIRE(cr.ok());
  return {agent::task_ref(*parsed.task, ""), cr.artifact};
}

sandbox::Result run_argv(const std::vector<std::string>& argv, const std::string& scratch = "") {
  sandbox::Spec s;
  s.argv = argv;
  if (!scratch.empty()) s.env_set["KFORGE_PROFILE_SCRATCH"] = scratch;
  s.limits.wall = std::chrono::milliseconds(120'000);
  s.isolate_network = false;
  return sandbox::run(s);
}

/// A fake ncu: insists on --profile-from-start off and --log-file, logs its target's kind to
/// `calls`, copies a recorded report (candidate or reference) to the log file and runs the
/// target (the arguments after the last ncu option), exiting with the target's status. With
/// `deny`, it prints ncu's counter-permission error instead and exits 1.
fs::path fake_ncu(const fs::path& dir, bool deny = false) {
  const fs::path slow = fs::path(KFORGE_TESTS_DIR) / "../bench/data/slow_kernels";
  const fs::path script = dir / "ncu";
  std::ofstream f(script);
  f << "#!/bin/sh\n"
    << "calls=" << (dir / "calls").string() << "\n"
    << (deny ? "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
               "Performance Counters on the target device 0.'; exit 1\n"
             : "")
    << "log=; off=\n"
    << "while [ $# -gt 0 ]; do\n"
    << "  case \"$1\" in\n"
    << "    --log-file) log=$2; shift 2;;\n"
    << "    --profile-from-start) [ \"$2\" = off ] && off=1; shift 2;;\n"
    << "    --csv) shift;;\n"
    << "    --page|--print-units|--metrics|--target-processes|--replay-mode|-k|-c) shift 2;;\n"
    << "    *) break;;\n"
    << "  esac\n"
    << "done\n"
    << "[ -n \"$off\" ] && [ -n \"$log\" ] || { echo 'fake ncu: bad arguments'; exit 9; }\n"
    << "case \"$2\" in\n"
    << "  --profile-reference) echo reference >> $calls; cp "
    << (fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_raw.csv").string() << " \"$log\";;\n"
    << "  *) echo candidate >> $calls; cp " << (slow / "launch_bound/ncu_candidate.csv").string()
    << " \"$log\";;\n"
    << "esac\n"
    << "exec \"$@\"\n";
  f.close();
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

}  // namespace

TEST_CASE("profile step: the judge's files and both targets run (cpu, no ncu)", "[runner][profile]") {
  const fs::path work = scratch("profile-targets");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  std::string error;
  auto targets = runner.profile_targets(c.task, c.artifact, work / "profile", 3000, &error);
  INFO(error);
  REQUIRE(targets);
  // The tensor file: both inputs, then the output, in the ABI's order, then the data.
  std::ifstream tf(work / "profile/profile_tensors.bin", std::ios::binary);
  std::string l1, l2, l3, l4, l5;
  std::getline(tf, l1);
  std::getline(tf, l2);
  std::getline(tf, l3);
  std::getline(tf, l4);
  std::getline(tf, l5);
  CHECK(l1 == "kforge-tensors 1");
  CHECK(l2.rfind("in 0 ", 0) == 0);  // KF_FLOAT32
  CHECK(l3.rfind("in 0 ", 0) == 0);
  CHECK(l4.rfind("out 0 ", 0) == 0);
  CHECK(l5 == "data");
  // The candidate's profile mode: one untimed and one profiled call, confined, exit 0.
  REQUIRE(targets->candidate.size() == 5);
  CHECK(targets->candidate[1] == "--profile");
  auto r = run_argv(targets->candidate);
  INFO(r.out << r.err);
  CHECK(r.ok());
  CHECK_THAT(r.out, Catch::Contains("profiled one call"));
  // The reference's: the runner loads the task again and makes its calls.
  REQUIRE(targets->reference.size() == 3);
  CHECK(targets->reference[1] == "--profile-reference");
  auto rr = run_argv(targets->reference);
  INFO(rr.out << rr.err);
  CHECK(rr.ok());
}

TEST_CASE("profile step: the candidate is confined in the profile mode too", "[runner][profile]") {
  const fs::path work = scratch("profile-confined");
  auto c = compile_adversarial("tmp_dropper", work / "build");
  backends::RunnerClient runner(cpu_runner());
  std::string error;
  auto targets = runner.profile_targets(c.task, c.artifact, work / "profile", 3000, &error);
  REQUIRE(targets);
  auto r = run_argv(targets->candidate);
  INFO(r.out << r.err);
  CHECK_FALSE(r.ok());
  CHECK(r.exit_code == 101);  // kViolationExit
  CHECK_THAT(r.err, Catch::Contains("violation"));
  CHECK_FALSE(fs::exists("/tmp/kforge_hook.so"));
  // With the scratch directory ncu needs, creating a file elsewhere is still refused (Landlock).
  fs::create_directories(work / "scratch");
  auto s = run_argv(targets->candidate, (work / "scratch").string());
  INFO(s.out << s.err);
  CHECK_FALSE(fs::exists("/tmp/kforge_hook.so"));
}

TEST_CASE("profile step: a bad tensor file is the host's error, not a crash", "[runner][profile]") {
  const fs::path work = scratch("profile-bad-file");
  auto c = compile_adversarial("correct", work / "build");
  {
    std::ofstream f(work / "bad.bin");
    f << "kforge-tensors 1\nin 0 1 4\ndata\nab";  // 2 of 16 bytes
  }
  fs::path host = fs::path(KFORGE_BUILD_DIR) / "backends/host/kforge-host";
  auto r = run_argv({host.string(), "--profile", c.artifact.string(), "-1", (work / "bad.bin").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("the data ends early"));
}

TEST_CASE("profile step: ncu's reports become findings and kernel times; the reference is profiled once",
          "[runner][profile]") {
  const fs::path work = scratch("profile-fake-ncu");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  agent::ProfileStep step;
  step.profiler = "ncu";
  step.ncu = std::make_unique<backends::NcuProfiler>(fake_ncu(work), backends::load_ncu_metrics());
  backends::Evaluation ev;
  ev.compile.artifact = c.artifact;
  AttemptRecord rec;
  rec.outcome = Outcome::pass;
  agent::record_profiler(rec, step, runner, c.task, ev, work / "a1");
  INFO(rec.profile.profiler_note);
  CHECK(rec.profile.profiler == "ncu");
  // The recorded launch-bound call has 64 launches: ncu -c stops there, and the note says so.
  CHECK(rec.profile.profiler_note == "ncu profiled only the first 64 kernel launches of the call");
  REQUIRE_FALSE(rec.profile.findings.empty());
  CHECK(rec.profile.findings[0].label == "launch overhead");
  CHECK(rec.profile.candidate_kernels.size() == 2);  // layer_norm_step, scale_shift_step
  CHECK_FALSE(rec.profile.reference_kernels.empty());
  CHECK(rec.profile.profiler_ms > 0);
  CHECK(fs::exists(work / "a1/ncu_candidate.csv"));
  CHECK_FALSE(fs::exists(work / "a1/profile_tensors.bin"));  // the inputs' copy is not kept
  AttemptRecord again;
  again.outcome = Outcome::pass;
  agent::record_profiler(again, step, runner, c.task, ev, work / "a2");
  CHECK(again.profile.reference_kernels.size() == rec.profile.reference_kernels.size());
  CHECK(read_file(work / "calls") == "candidate\nreference\ncandidate\n");
  // A failed attempt is not profiled, unless asked for (--profile-failing) and its kernel ran.
  AttemptRecord failed;
  failed.outcome = Outcome::output_mismatch;
  agent::record_profiler(failed, step, runner, c.task, ev, work / "a3");
  CHECK(failed.profile.findings.empty());
  CHECK(read_file(work / "calls") == "candidate\nreference\ncandidate\n");
  step.failing = true;
  agent::record_profiler(failed, step, runner, c.task, ev, work / "a4");
  CHECK_FALSE(failed.profile.findings.empty());
  AttemptRecord crashed;
  crashed.outcome = Outcome::runtime_error;
  agent::record_profiler(crashed, step, runner, c.task, ev, work / "a5");
  CHECK(read_file(work / "calls") == "candidate\nreference\ncandidate\ncandidate\n");
  // kforge run (issue 21 §4): a pass short of its episode's best speedup gets the basic profile.
  AttemptRecord slower;
  slower.outcome = Outcome::pass;
  slower.speedup = 1.1;
  agent::record_profiler(slower, step, runner, c.task, ev, work / "a6", 1.5);
  CHECK(slower.profile.profiler == "basic");
  CHECK(slower.profile.findings.empty());
  CHECK_THAT(slower.profile.profiler_note, Catch::Contains("does not improve the episode's best (1.50x)"));
  CHECK(read_file(work / "calls") == "candidate\nreference\ncandidate\ncandidate\n");  // no ncu run
}

TEST_CASE("profile step: ncu without counter permission is a note, never a failure", "[runner][profile]") {
  const fs::path work = scratch("profile-denied");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  agent::ProfileStep step;
  step.profiler = "ncu";
  step.ncu = std::make_unique<backends::NcuProfiler>(fake_ncu(work, true), backends::load_ncu_metrics());
  backends::Evaluation ev;
  ev.compile.artifact = c.artifact;
  AttemptRecord rec;
  rec.outcome = Outcome::pass;
  agent::record_profiler(rec, step, runner, c.task, ev, work / "a1");
  CHECK(rec.passed());
  CHECK(rec.profile.findings.empty());
  CHECK_THAT(rec.profile.profiler_note, Catch::Contains("ERR_NVGPUCTRPERM"));
}

TEST_CASE("profile step: --profiler resolves per backend", "[profile]") {
  CHECK(agent::make_profile_step("auto", "cpu")->profiler == "basic");
  CHECK(agent::make_profile_step("ncu", "cpu")->profiler == "basic");  // ncu profiles GPU kernels
  CHECK(agent::make_profile_step("none", "cuda")->profiler == "none");
  CHECK_THROWS_AS(agent::make_profile_step("nsys", "cuda"), std::invalid_argument);
  auto cuda = agent::make_profile_step("auto", "cuda");
  if (backends::find_ncu()) {
    CHECK(cuda->profiler == "ncu");
    CHECK(cuda->ncu);
  } else {
    CHECK(cuda->profiler == "basic");
    CHECK_THAT(cuda->note, Catch::Contains("ncu not found"));
  }
}

namespace {

/// A fake NcuRunFn: logs each run's target kind, replay mode and timeout; writes a recorded
/// report where ncu would (the candidate's or the reference's) and returns it parsed. With
/// `hang_candidate`, the candidate's run takes its whole timeout and reports ncu's timeout.
struct FakeRuns {
  std::vector<std::string> log;
  bool hang_candidate = false;
  backends::NcuRunFn fn() {
    return [this](const std::vector<backends::NcuMetric>&, const std::vector<std::string>& target,
                  const backends::NcuOptions& o, std::chrono::milliseconds timeout) {
      const bool reference = std::find(target.begin(), target.end(), "--profile-reference") != target.end();
      log.push_back(std::string(reference ? "reference" : "candidate") + " " + o.replay_mode);
      backends::NcuRun r;
      if (!reference && hang_candidate) {
        std::this_thread::sleep_for(timeout);
        r.wall_ms = static_cast<double>(timeout.count());
        r.error = "ncu did not finish within " + std::to_string(timeout.count() / 1000) + " s";
        return r;
      }
      const fs::path rec = reference ? fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_raw.csv"
                                     : fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_divergent.csv";
      write_file(o.report_csv, read_file(rec));
      r.report = backends::parse_ncu_csv(read_file(rec));
      r.wall_ms = 1;
      return r;
    };
  }
};

}  // namespace

TEST_CASE("ncu replay: application where the call is idempotent, restarts cheaply and is large",
          "[profile][ncu]") {
  ::unsetenv("KFORGE_NCU_REPLAY");  // the override, tested below

  const double big = backends::kApplicationReplayBytes, small = 1 << 20;
  CHECK(backends::choose_replay_mode(true, true, big) == "application");
  CHECK(backends::choose_replay_mode(true, true, small) == "kernel");  // a start per pass costs more
  CHECK(backends::choose_replay_mode(false, true, big) == "kernel");   // not idempotent: needs restores
  CHECK(backends::choose_replay_mode(true, false, big) == "kernel");   // PyTorch's start-up per pass
  backends::NcuOptions o;
  o.replay_mode = "application";
  auto a = backends::ncu_argv({}, {"target"}, o);
  auto at = std::find(a.begin(), a.end(), "--replay-mode");
  REQUIRE(at != a.end());
  CHECK(*(at + 1) == "application");
  CHECK(a.back() == "target");
  ::setenv("KFORGE_NCU_REPLAY", "application", 1);
  CHECK(backends::choose_replay_mode(false, false, small) == "application");
  ::unsetenv("KFORGE_NCU_REPLAY");
}

TEST_CASE("profile step: the reference's report is kept across runs, keyed by task and environment",
          "[runner][profile]") {
  const fs::path work = scratch("profile-ref-cache");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  FakeRuns fake;
  std::string env = "gpu=NVIDIA H100 80GB HBM3; driver=570.1 torch=2.11 cuda=12.8 ncu=2025.1";
  backends::NcuProfilerOptions po;
  po.reference_cache = work / "cache";
  po.run = fake.fn();
  po.environment = [&] { return env; };
  {
    backends::NcuProfiler first(fake_ncu(work), backends::load_ncu_metrics(), po);
    auto p = first.profile(runner, c.task, c.artifact, work / "a1");
    INFO(p.note);
    CHECK_FALSE(p.reference_cached);
    CHECK_FALSE(p.reference.empty());
    CHECK(p.replay_mode == "kernel");  // a small task: ncu's copies cost less than restarts
    CHECK(fake.log == std::vector<std::string>{"candidate kernel", "reference kernel"});
  }
  // A later run (a new profiler, as in a new process) reads the reference from the cache.
  backends::NcuProfiler second(fake_ncu(work), backends::load_ncu_metrics(), po);
  auto p = second.profile(runner, c.task, c.artifact, work / "a2");
  CHECK(p.reference_cached);
  CHECK(p.reference.kernels.size() == 3);
  CHECK(fake.log.size() == 3);  // the candidate only
  // Another shape profile (the source as sent differs) or another environment is another key.
  auto other = c.task;
  other.source += "\n# another shape profile\n";
  CHECK(backends::NcuReferenceCache::key(other, env, backends::load_ncu_metrics()) !=
        backends::NcuReferenceCache::key(c.task, env, backends::load_ncu_metrics()));
  const auto key = backends::NcuReferenceCache::key(c.task, env, backends::load_ncu_metrics());
  CHECK(backends::NcuReferenceCache(work / "cache").get(key));
  env = "gpu=NVIDIA H200; driver=570.1 torch=2.11 cuda=12.8 ncu=2025.1";
  CHECK_FALSE(backends::NcuReferenceCache(work / "cache")
                  .get(backends::NcuReferenceCache::key(c.task, env, backends::load_ncu_metrics())));
  backends::NcuProfiler third(fake_ncu(work), backends::load_ncu_metrics(), po);
  p = third.profile(runner, c.task, c.artifact, work / "a3");
  CHECK_FALSE(p.reference_cached);
  CHECK(fake.log.size() == 5);  // the candidate, and the reference again on the new GPU
}

TEST_CASE("profile step: ncu's wall-clock budget; a run it leaves no time for is skipped with a note",
          "[runner][profile]") {
  const fs::path work = scratch("profile-budget");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  REQUIRE(runner.load(c.task).ok);  // loaded before the clock starts
  FakeRuns fake;
  fake.hang_candidate = true;
  backends::NcuProfilerOptions po;
  po.budget = std::chrono::milliseconds(3000);
  po.run = fake.fn();
  po.environment = [] { return std::string("gpu=test"); };
  backends::NcuProfiler prof(fake_ncu(work), backends::load_ncu_metrics(), po);
  const auto t0 = std::chrono::steady_clock::now();
  auto p = prof.profile(runner, c.task, c.artifact, work / "a1");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(p.note);
  CHECK(s < 6);                                                     // the budget, not ncu's 120 s per run
  CHECK(fake.log == std::vector<std::string>{"candidate kernel"});  // no time left for the reference
  CHECK_THAT(p.note, Catch::Contains("ncu did not finish within"));
  CHECK_THAT(p.note, Catch::Contains("the profile budget of 3 s"));
  CHECK_THAT(p.note,
             Catch::Contains("reference not profiled: the profile budget of 3 s was spent on the candidate"));
  CHECK(p.candidate.empty());
  CHECK(p.reference.empty());
}
