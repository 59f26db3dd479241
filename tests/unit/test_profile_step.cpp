// [runner][profile] issue 11 §1, the ncu part of the profile step without a GPU: the judge's
// profile files and command lines (profile_setup), the candidate host's profile mode (one
// confined untimed call and one profiled call; a forbidden syscall is still stopped), the
// runner's reference-call mode, and NcuProfiler/record_profiler against a fake `ncu` that
// checks its arguments, writes a recorded CSV and runs the target. Issue 21 §4: the ncu command
// lines for cuda and Triton candidates (replay mode, cache control, launch cap, budget), the
// Triton host's profile mode (its calls and its confinement, on the CPU) and the scaled profile of
// huge inputs. Live ncu runs on the GPU machine (the [.gpu] case here, scripts/gpu-check,
// scripts/gpu-ncu-cost).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "adversarial_task.hpp"
#include "catch.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/backends/profile_gate.hpp"
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

/// Runs `argv` as run_argv does, with $KFORGE_PROFILE_GATE naming `gate` (absent): after
/// `closed` it must still be running and have said only that it stands at its gate
/// (kProfileGateReadyLine: it waits there, before CUDA and before the candidate is loaded;
/// `not_yet`, when given, does not exist yet); then the gate opens and it runs to its end.
sandbox::Result gated_run(const std::vector<std::string>& argv, const fs::path& gate,
                          std::chrono::milliseconds closed, const std::string& scratch = "",
                          const fs::path& not_yet = {}) {
  sandbox::Spec s;
  s.argv = argv;
  if (!scratch.empty()) s.env_set["KFORGE_PROFILE_SCRATCH"] = scratch;
  s.env_set["KFORGE_PROFILE_GATE"] = gate.string();
  s.isolate_network = false;
  std::string error;
  auto child = sandbox::LineChild::start(s, &error);
  REQUIRE(child);
  // Its start-up (a runner imports torch) ends with the line, then it waits.
  const std::string ready = std::string(backends::kProfileGateReadyLine) + "\n";
  std::string out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (out.find(ready) == std::string::npos && child->alive() && std::chrono::steady_clock::now() < until)
    if (auto line = child->read_line(std::chrono::milliseconds(100))) out += *line + "\n";
  CHECK(out == ready);
  std::this_thread::sleep_for(closed);
  CHECK(child->alive());
  if (!not_yet.empty()) CHECK_FALSE(fs::exists(not_yet));
  out.clear();
  while (auto line = child->read_line(std::chrono::milliseconds(100))) out += *line + "\n";
  CHECK(out.empty());
  write_file(gate, "");
  for (int i = 0; i < 1200 && child->alive(); ++i)
    while (auto line = child->read_line(std::chrono::milliseconds(100))) out += *line + "\n";
  sandbox::Result r = child->alive() ? child->terminate() : child->wait();
  r.out = out + r.out;
  return r;
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
    << "    --page|--print-units|--metrics|--target-processes|--replay-mode|--cache-control|-k|-c) shift "
       "2;;\n"
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

TEST_CASE("run_ncu: a profiled process that fails is named by its own last words", "[profile]") {
  // ncu passes its target's output through and ends with one ==ERROR== line that says only that
  // the application failed; the error must carry the target's own reason too.
  const fs::path work = scratch("profile-ncu-target-fails");
  const fs::path script = work / "ncu";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n"
      << "echo '==PROF== Connected to process 4242' >&2\n"
      << "echo '" << backends::kProfileGateReadyLine << "'\n"
      << "echo 'Traceback (most recent call last):' >&2\n"
      << "echo 'RuntimeError: the profiled call failed here' >&2\n"
      << "echo '==ERROR== The application returned an error code (1).'\n"
      << "exit 1\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  backends::NcuOptions opt;
  opt.ncu = script;
  opt.report_csv = work / "ncu.csv";
  const auto r =
      backends::run_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt, std::chrono::milliseconds(20'000));
  INFO(r.error);
  CHECK(r.report.empty());
  CHECK(r.error.rfind("The application returned an error code (1).", 0) == 0);
  CHECK(r.error.find("RuntimeError: the profiled call failed here") != std::string::npos);
  CHECK(r.error.find("==PROF==") == std::string::npos);
  CHECK(r.error.find(backends::kProfileGateReadyLine) == std::string::npos);  // its gate's, not its words
}

namespace {

/// A fake ncu for start_ncu: notes its start in `dir`/started, sleeps `before_s` (its start-up),
/// says it stands at its gate (kProfileGateReadyLine), waits for $KFORGE_PROFILE_GATE, notes
/// that in `dir`/ran, sleeps `after_s`, then copies a recorded report to its --log-file.
fs::path gated_ncu(const fs::path& dir, int after_s = 0, int before_s = 0) {
  fs::create_directories(dir);
  const fs::path script = dir / "ncu";
  std::ofstream f(script);
  f << "#!/bin/sh\n"
    << "log=\n"
    << "while [ $# -gt 0 ]; do [ \"$1\" = --log-file ] && log=$2; shift; done\n"
    << "echo $$ > " << (dir / "started").string() << "\n"
    << "sleep " << before_s << "\n"
    << "echo '" << backends::kProfileGateReadyLine << "'\n"
    << "while [ ! -e \"$KFORGE_PROFILE_GATE\" ]; do sleep 0.01; done\n"
    << "echo ran > " << (dir / "ran").string() << "\n"
    << "sleep " << after_s << "\n"
    << "cp " << (fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_raw.csv").string() << " \"$log\"\n";
  f.close();
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

bool appears(const fs::path& f, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!fs::exists(f) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return fs::exists(f);
}

}  // namespace

TEST_CASE("start_ncu: the run starts at once and waits at its gate until finish() opens it", "[profile]") {
  const fs::path work = scratch("profile-gate");
  backends::NcuOptions opt;
  opt.ncu = gated_ncu(work / "one");
  opt.report_csv = work / "one/ncu.csv";
  auto launch = backends::start_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt);
  REQUIRE(appears(work / "one/started", std::chrono::milliseconds(20'000)));
  CHECK(launch->ready(std::chrono::milliseconds(20'000)));  // it said so
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK_FALSE(fs::exists(work / "one/ran"));          // at its gate
  CHECK(fs::is_directory(work / "one/ncu.csv.tmp"));  // its scratch directory
  const auto r = launch->finish(std::chrono::milliseconds(20'000));
  INFO(r.error);
  CHECK(r.error.empty());
  CHECK(r.report.kernels.size() == 3);
  CHECK(fs::exists(work / "one/ran"));
  CHECK(r.wall_ms < 1500);  // from the gate's opening, not from the start
  CHECK_FALSE(fs::exists(work / "one/ncu.csv.gate"));
  CHECK_FALSE(fs::exists(work / "one/ncu.csv.tmp"));
  // Destroyed unfinished: the run is killed, its gate never opens.
  opt.ncu = gated_ncu(work / "two");
  opt.report_csv = work / "two/ncu.csv";
  launch = backends::start_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt);
  REQUIRE(appears(work / "two/started", std::chrono::milliseconds(20'000)));
  launch.reset();
  write_file(work / "two/ncu.csv.gate", "");  // too late: nothing waits for it
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(fs::exists(work / "two/ran"));
  // A run past its limit is killed and says so; the limit counts from the gate's opening.
  opt.ncu = gated_ncu(work / "three", 30);
  opt.report_csv = work / "three/ncu.csv";
  launch = backends::start_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt);
  const auto t0 = std::chrono::steady_clock::now();
  const auto late = launch->finish(std::chrono::milliseconds(2000));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(15));
  CHECK(late.error == "ncu did not finish within 2 s");
  // ready() waits out the target's start-up, and not longer than its limit; a run that ends
  // before its gate is not ready and says why in finish().
  opt.ncu = gated_ncu(work / "four", 0, 2);
  opt.report_csv = work / "four/ncu.csv";
  launch = backends::start_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt);
  const auto t1 = std::chrono::steady_clock::now();
  CHECK_FALSE(launch->ready(std::chrono::milliseconds(300)));
  CHECK(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(2));
  CHECK(launch->ready(std::chrono::milliseconds(20'000)));
  CHECK(std::chrono::steady_clock::now() - t1 >= std::chrono::milliseconds(1900));
  CHECK_FALSE(fs::exists(work / "four/ran"));
  CHECK(launch->finish(std::chrono::milliseconds(20'000)).error.empty());
  opt.ncu = "/bin/false";
  opt.report_csv = work / "five/ncu.csv";
  fs::create_directories(work / "five");
  launch = backends::start_ncu(backends::load_ncu_metrics(), {"/bin/true"}, opt);
  CHECK_FALSE(launch->ready(std::chrono::milliseconds(20'000)));
  CHECK_FALSE(launch->finish(std::chrono::milliseconds(20'000)).error.empty());
}

TEST_CASE(
    "profile step: both runs start before the timed lock; the reference's gate opens after the "
    "candidate's run",
    "[runner][profile]") {
  const fs::path work = scratch("profile-order");
  auto c = compile_adversarial("correct", work / "build");
  std::vector<std::string> events;
  std::mutex mu;
  auto note = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(e);
  };
  struct RecordingLock : backends::TimedLock {
    std::function<void(const std::string&)> note;
    backends::TimedHold acquire(const std::string&, const std::string& what, std::chrono::milliseconds,
                                Mode mode) override {
      const std::string e = (mode == Mode::exclusive ? "timed:" : "shared:") + what;
      note(e);
      return backends::TimedHold(backends::TimedHold::State::held, 0, "",
                                 [this, e] { note("release " + e); });
    }
  } lock;
  lock.note = note;
  struct Launch : backends::NcuLaunch {
    std::string which;
    std::function<void(const std::string&)> note;
    backends::NcuOptions opt;
    bool ready(std::chrono::milliseconds) override {
      note("ready " + which);
      return true;
    }
    backends::NcuRun finish(std::chrono::milliseconds) override {
      note("finish " + which);
      const fs::path rec = fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_raw.csv";
      write_file(opt.report_csv, read_file(rec));
      backends::NcuRun r;
      r.report = backends::parse_ncu_csv(read_file(rec));
      return r;
    }
    ~Launch() override { note("end " + which); }
  };
  backends::RunnerConfig rc = cpu_runner();
  rc.timed_lock = &lock;
  backends::RunnerClient runner(rc);
  backends::NcuProfilerOptions po;
  po.environment = [] { return std::string("gpu=test"); };
  po.start = [&](const std::vector<backends::NcuMetric>&, const std::vector<std::string>& target,
                 const backends::NcuOptions& o) -> std::unique_ptr<backends::NcuLaunch> {
    auto l = std::make_unique<Launch>();
    l->which = std::find(target.begin(), target.end(), "--profile-reference") != target.end() ? "reference"
                                                                                              : "candidate";
    l->note = note;
    l->opt = o;
    note("start " + l->which);
    return l;
  };
  backends::NcuProfiler prof(fake_ncu(work), backends::load_ncu_metrics(), po);
  auto p = prof.profile(runner, c.task, c.artifact, work / "a1", backends::HostKind::native);
  INFO(p.note);
  CHECK_FALSE(p.candidate.empty());
  CHECK_FALSE(p.reference.empty());
  // The judge's files under a shared hold; both runs started and at their gates (their
  // start-up over); then the exclusive hold, the candidate's run to its end (its process tree
  // gone), then the reference's.
  std::vector<std::string> tail;
  bool seen = false;
  for (const auto& e : events) {
    if (e == "start candidate") seen = true;
    if (seen) tail.push_back(e);
  }
  CHECK(std::find(events.begin(), events.end(), "shared:profile setup") < events.end() - tail.size());
  CHECK(tail == std::vector<std::string>{"start candidate", "start reference", "ready candidate",
                                         "ready reference", "timed:ncu", "finish candidate", "end candidate",
                                         "finish reference", "end reference", "release timed:ncu"});
}

TEST_CASE("profile step: the judge's files and both targets run (cpu, no ncu)", "[runner][profile]") {
  const fs::path work = scratch("profile-targets");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  auto targets =
      runner.profile_targets(c.task, c.artifact, work / "profile", 3000, backends::HostKind::native);
  INFO((targets ? "" : targets.failure().message));
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
  // Started ahead of their turn, both wait at their gates (profile_gate.hpp) until they open.
  r = gated_run(targets->candidate, work / "candidate.gate", std::chrono::milliseconds(800));
  INFO(r.out << r.err);
  CHECK(r.ok());
  CHECK_THAT(r.out, Catch::Contains("profiled one call"));
  rr = gated_run(targets->reference, work / "reference.gate", std::chrono::milliseconds(800));
  INFO(rr.out << rr.err);
  CHECK(rr.ok());
}

TEST_CASE("profile step: the candidate is confined in the profile mode too", "[runner][profile]") {
  const fs::path work = scratch("profile-confined");
  auto c = compile_adversarial("tmp_dropper", work / "build");
  backends::RunnerClient runner(cpu_runner());
  auto targets =
      runner.profile_targets(c.task, c.artifact, work / "profile", 3000, backends::HostKind::native);
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

TEST_CASE(
    "check_and_bench: before_bench runs once a check passed, before its bench; never after a failed one",
    "[runner][profile]") {
  const fs::path work = scratch("profile-before-bench");
  backends::RunnerClient runner(cpu_runner());
  backends::EvalOptions opt;
  opt.bench = true;
  opt.bench_options.reps = 3;
  opt.bench_options.min_reps = 3;
  for (const auto& [kernel, passes] : {std::pair{"correct", true}, std::pair{"partial_output", false}}) {
    auto c = compile_adversarial(kernel, work / kernel);
    backends::Evaluation ev;
    ev.compile.status = backends::CompileStatus::ok;
    ev.compile.artifact = c.artifact;
    ev.seed = 7;
    int calls = 0;
    bool benched_before = false;
    backends::check_and_bench(ev, runner, c.task, opt, [&] {
      ++calls;
      benched_before = ev.bench.has_value();
    });
    INFO(kernel << ": " << to_string(ev.outcome) << " " << ev.message);
    CHECK((ev.outcome == Outcome::pass) == passes);
    CHECK(calls == (passes ? 1 : 0));
    CHECK_FALSE(benched_before);
    CHECK(ev.bench.has_value() == passes);
  }
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
  // Without timing (--no-bench) the default profiles nothing; an explicit choice is kept.
  CHECK(agent::make_profile_step("auto", "cuda", false)->profiler == "none");
  CHECK(agent::make_profile_step("auto", "triton", false)->profiler == "none");
  CHECK(agent::make_profile_step("basic", "cuda", false)->profiler == "basic");
  CHECK(agent::make_profile_step("auto", "cpu", true)->profiler == "basic");
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

TEST_CASE("ncu replay: kernel replay unless ncu's saved copy would not fit on the device", "[profile][ncu]") {
  ::unsetenv("KFORGE_NCU_REPLAY");  // the override, tested below
  const double gpu = 80e9, small = 1 << 20, huge = 12.8e9, over_half = 41e9;
  // KernelBench 19_ReLU's 12.8 GB call (6.4 GB in, 6.4 GB out): application replay restarted
  // the host, which read 6.4 GB of tensor file, once per pass (over 120 s on an H100).
  CHECK(backends::choose_replay_mode(true, true, huge, gpu) == "kernel");
  CHECK(backends::choose_replay_mode(true, true, small, gpu) == "kernel");
  CHECK(backends::choose_replay_mode(true, true, over_half, gpu) == "application");  // no room to save
  CHECK(backends::choose_replay_mode(false, true, over_half, gpu) == "kernel");  // not idempotent: restores
  CHECK(backends::choose_replay_mode(true, false, over_half, gpu) == "kernel");  // Python's start-up per pass
  CHECK(backends::choose_replay_mode(true, true, over_half, 0) == "kernel");  // the device's memory unknown
  backends::NcuOptions o;
  o.replay_mode = "application";
  o.cache_control = "all";
  auto a = backends::ncu_argv({}, {"target"}, o);
  auto at = std::find(a.begin(), a.end(), "--replay-mode");
  REQUIRE(at != a.end());
  CHECK(*(at + 1) == "application");
  at = std::find(a.begin(), a.end(), "--cache-control");
  REQUIRE(at != a.end());
  CHECK(*(at + 1) == "all");
  CHECK(a.back() == "target");
  ::setenv("KFORGE_NCU_REPLAY", "application", 1);
  CHECK(backends::choose_replay_mode(false, false, small, gpu) == "application");
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
  po.start = backends::deferred_start(fake.fn());
  po.environment = [&] { return env; };
  {
    backends::NcuProfiler first(fake_ncu(work), backends::load_ncu_metrics(), po);
    auto p = first.profile(runner, c.task, c.artifact, work / "a1", backends::HostKind::native);
    INFO(p.note);
    CHECK_FALSE(p.reference_cached);
    CHECK_FALSE(p.reference.empty());
    CHECK(p.replay_mode == "kernel");  // a small task: ncu's copies cost less than restarts
    CHECK(fake.log == std::vector<std::string>{"candidate kernel", "reference kernel"});
  }
  // A later run (a new profiler, as in a new process) reads the reference from the cache.
  backends::NcuProfiler second(fake_ncu(work), backends::load_ncu_metrics(), po);
  auto p = second.profile(runner, c.task, c.artifact, work / "a2", backends::HostKind::native);
  CHECK(p.reference_cached);
  CHECK(p.reference.kernels.size() == 3);
  CHECK(fake.log.size() == 3);  // the candidate only
  // Another shape profile (the source as sent differs) or another environment is another key.
  const auto reference_set = backends::reference_metrics(backends::load_ncu_metrics());
  auto other = c.task;
  other.source += "\n# another shape profile\n";
  CHECK(backends::NcuReferenceCache::key(other, env, reference_set) !=
        backends::NcuReferenceCache::key(c.task, env, reference_set));
  const auto key = backends::NcuReferenceCache::key(c.task, env, reference_set);
  CHECK(backends::NcuReferenceCache(work / "cache").get(key));
  env = "gpu=NVIDIA H200; driver=570.1 torch=2.11 cuda=12.8 ncu=2025.1";
  CHECK_FALSE(backends::NcuReferenceCache(work / "cache")
                  .get(backends::NcuReferenceCache::key(c.task, env, reference_set)));
  backends::NcuProfiler third(fake_ncu(work), backends::load_ncu_metrics(), po);
  p = third.profile(runner, c.task, c.artifact, work / "a3", backends::HostKind::native);
  CHECK_FALSE(p.reference_cached);
  CHECK(fake.log.size() == 5);  // the candidate, and the reference again on the new GPU
}

TEST_CASE("profile step: ncu's wall-clock budget; a run it leaves no time for is skipped with a note",
          "[runner][profile]") {
  const fs::path work = scratch("profile-budget");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  REQUIRE(runner.load(c.task).ok());  // loaded before the clock starts
  FakeRuns fake;
  fake.hang_candidate = true;
  backends::NcuProfilerOptions po;
  po.budget = std::chrono::milliseconds(3000);
  po.start = backends::deferred_start(fake.fn());
  po.environment = [] { return std::string("gpu=test"); };
  backends::NcuProfiler prof(fake_ncu(work), backends::load_ncu_metrics(), po);
  const auto t0 = std::chrono::steady_clock::now();
  auto p = prof.profile(runner, c.task, c.artifact, work / "a1", backends::HostKind::native);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(p.note);
  // The budget, not ncu's 120 s per run (240 s for both): a bound well below that, and well above
  // the 3 s budget plus the profile setup's requests on a loaded machine (46 s measured there).
  CHECK(s < 90);
  CHECK(fake.log == std::vector<std::string>{"candidate kernel"});  // no time left for the reference
  CHECK_THAT(p.note, Catch::Contains("ncu did not finish within"));
  CHECK_THAT(p.note, Catch::Contains("the profile budget of 3 s"));
  CHECK_THAT(p.note,
             Catch::Contains("reference not profiled: the profile budget of 3 s was spent on the candidate"));
  CHECK(p.candidate.empty());
  CHECK(p.reference.empty());
}

namespace {

/// A fake NcuRunFn that keeps the whole ncu command line of each run (ncu_argv, as run_ncu
/// builds it) and the first `in` line of the candidate's tensor file (read before the profile
/// step removes it); it reports a recorded report.
struct ArgvRuns {
  std::vector<std::vector<std::string>> argvs;
  std::vector<std::chrono::milliseconds> timeouts;
  std::string first_input;
  backends::NcuRunFn fn() {
    return [this](const std::vector<backends::NcuMetric>& metrics, const std::vector<std::string>& target,
                  const backends::NcuOptions& o, std::chrono::milliseconds timeout) {
      argvs.push_back(backends::ncu_argv(metrics, target, o));
      timeouts.push_back(timeout);
      for (const auto& a : target)
        if (a.size() > 4 && a.compare(a.size() - 4, 4, ".bin") == 0 && first_input.empty()) {
          std::ifstream f(a);
          std::string line;
          while (std::getline(f, line) && line.rfind("in ", 0) != 0) {
          }
          first_input = line;
        }
      const fs::path rec = fs::path(KFORGE_TESTS_DIR) / "data/profile/ncu_raw.csv";
      write_file(o.report_csv, read_file(rec));
      backends::NcuRun r;
      r.report = backends::parse_ncu_csv(read_file(rec));
      r.wall_ms = 1;
      return r;
    };
  }
};

/// "m1,m2,...": the metric names as ncu_argv joins them.
std::string join_names(const std::vector<backends::NcuMetric>& metrics) {
  std::string out;
  for (const auto& m : metrics) out += (out.empty() ? "" : ",") + m.name;
  return out;
}

/// The value after `opt` in `argv` ("" when absent).
std::string after(const std::vector<std::string>& argv, const std::string& opt) {
  auto it = std::find(argv.begin(), argv.end(), opt);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

backends::NcuProfilerOptions argv_options(ArgvRuns& runs) {
  backends::NcuProfilerOptions po;
  po.start = backends::deferred_start(runs.fn());
  po.environment = [] { return std::string("gpu=test"); };
  return po;
}

/// A Triton candidate module for the adversarial task (relu(x) * 2 + y), written as the
/// artifact the triton build would leave; `body` is kf_forward's.
fs::path triton_artifact(const fs::path& dir, const std::string& body) {
  fs::create_directories(dir);
  std::string src = read_file(fs::path(KFORGE_TESTS_DIR) / "data/adversarial/triton/correct/kernel.py");
  src = src.substr(0, src.find("def kf_forward"));
  write_file(dir / "kernel.py", src + body);
  return dir / "kernel.py";
}

}  // namespace

TEST_CASE("ncu argv: a cuda candidate under kernel replay, cold caches, its launches capped, then the host",
          "[runner][profile][ncu]") {
  const fs::path work = scratch("profile-argv-cuda");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  ArgvRuns runs;
  backends::NcuProfiler prof("/opt/ncu/ncu", backends::load_ncu_metrics(), argv_options(runs));
  auto p = prof.profile(runner, c.task, c.artifact, work / "a1", backends::HostKind::native);
  INFO(p.note);
  REQUIRE(runs.argvs.size() == 2);  // the candidate, then the reference
  const auto& a = runs.argvs[0];
  CHECK(a[0] == "/opt/ncu/ncu");
  CHECK(after(a, "--profile-from-start") == "off");
  CHECK(after(a, "--replay-mode") == "kernel");
  CHECK(after(a, "--cache-control") == "all");
  CHECK(after(a, "-c") == std::to_string(backends::NcuProfiler::kMaxLaunches));
  CHECK(after(a, "--log-file") == (work / "a1/ncu_candidate.csv").string());
  CHECK(after(a, "--target-processes") == "all");
  CHECK(std::find(a.begin(), a.end(), "-k") == a.end());  // the profiled window holds the call alone
  // The target: kforge-host's profile mode on the artifact, the device, the judge's tensor file.
  auto host = std::find(a.begin(), a.end(), "--profile");
  REQUIRE(host != a.end());
  CHECK(fs::path(*(host - 1)).filename() == "kforge-host");
  CHECK(std::vector<std::string>(host + 1, a.end()) ==
        std::vector<std::string>{fs::absolute(c.artifact).string(), "-1",
                                 fs::absolute(work / "a1/profile_tensors.bin").string()});
  CHECK(p.replay_mode == "kernel");
  const auto& r = runs.argvs[1];
  CHECK(after(r, "--replay-mode") == "kernel");
  CHECK(after(r, "--log-file") == (work / "a1/ncu_reference.csv").string());
  CHECK(after(r, "--profile-reference") == fs::absolute(work / "a1/profile_reference.json").string());
  // The candidate with the whole set, the reference with what its record keeps: the time metric
  // and the launch__ values (no replay pass of their own).
  CHECK(after(a, "--metrics") == join_names(backends::load_ncu_metrics()));
  CHECK(after(r, "--metrics") == join_names(backends::reference_metrics(backends::load_ncu_metrics())));
  CHECK_THAT(after(r, "--metrics"), Catch::Matchers::StartsWith("gpu__time_duration.sum,launch__"));
  CHECK_THAT(after(r, "--metrics"), !Catch::Contains("smsp__") && !Catch::Contains("dram__"));
  // Each run's timeout is what is left of the step's budget (120 s by default).
  REQUIRE(runs.timeouts.size() == 2);
  CHECK(runs.timeouts[0] <= backends::NcuProfilerOptions().budget);
  CHECK(runs.timeouts[0] > backends::NcuProfilerOptions().budget - std::chrono::milliseconds(60'000));
  CHECK(runs.timeouts[1] <= runs.timeouts[0]);
}

TEST_CASE("ncu argv: a Triton candidate is profiled through the Triton host's profile mode",
          "[runner][profile][ncu][triton]") {
  const fs::path work = scratch("profile-argv-triton");
  const auto artifact = triton_artifact(work / "build",
                                        "def kf_forward(x, y):\n"
                                        "    out = torch.empty_like(x)\n"
                                        "    launch(x, y, out)\n"
                                        "    return out\n");
  backends::RunnerClient runner(cpu_runner());
  ArgvRuns runs;
  backends::NcuProfiler prof("/opt/ncu/ncu", backends::load_ncu_metrics(), argv_options(runs));
  auto p = prof.profile(runner, adversarial_task(), artifact, work / "a1", backends::HostKind::python);
  INFO(p.note);
  REQUIRE(runs.argvs.size() == 2);
  const auto& a = runs.argvs[0];
  // Kernel replay: the Triton host's start (torch, Triton, its JIT) per pass would cost more.
  CHECK(after(a, "--replay-mode") == "kernel");
  CHECK(after(a, "--cache-control") == "all");
  auto mode = std::find(a.begin(), a.end(), "--profile");
  REQUIRE(mode != a.end());
  CHECK(fs::path(*(mode - 1)).filename() == "host.py");
  CHECK(*(mode - 2) == "-B");
  CHECK(*(mode - 3) == "-I");  // isolated, as the judged host runs
  const std::vector<std::string> rest(mode + 1, a.end());
  REQUIRE(rest.size() == 6);
  CHECK(rest[0] == fs::absolute(artifact).string());
  CHECK(rest[1] == "-1");
  CHECK(rest[2] == fs::absolute(work / "a1/profile_tensors.bin").string());
  CHECK(fs::path(rest[3]).filename() == "libkforge_pyconfine.so");
  CHECK(rest[4] == fs::absolute(work / "a1/profile_model.json").string());
  auto model = nlohmann::json::parse(read_file(rest[4]));
  CHECK(model["inputs"] == 2);
  CHECK(model["mode"] == "eval");
}

TEST_CASE("profile step: the Triton host's profile mode makes its calls, confined (cpu, no ncu)",
          "[runner][profile][triton]") {
  const fs::path work = scratch("profile-triton-host");
  backends::RunnerClient runner(cpu_runner());
  const auto task = adversarial_task();
  fs::create_directories(work / "scratch");
  auto run_candidate = [&](const std::string& name, const std::string& body) {
    const auto artifact = triton_artifact(work / name, body);
    auto targets =
        runner.profile_targets(task, artifact, work / name / "profile", 3000, backends::HostKind::python);
    INFO((targets ? "" : targets.failure().message));
    REQUIRE(targets);
    return run_argv(targets->candidate, (work / "scratch").string());
  };
  // kf_forward, and KernelBench's ModelNew built from the judge's description (profile_model.json).
  auto r = run_candidate("kf_forward",
                         "def kf_forward(x, y):\n"
                         "    out = torch.empty_like(x)\n"
                         "    launch(x, y, out)\n"
                         "    return out\n");
  INFO(r.out << r.err);
  CHECK(r.ok());
  CHECK_THAT(r.out, Catch::Contains("kforge triton host: profiled one call"));
  {
    // Started ahead of its turn, it imports torch and Triton and waits at its gate: the
    // candidate's module (which notes its import in the scratch directory) only after it opens.
    const auto artifact = triton_artifact(work / "gated",
                                          "import os\n"
                                          "open(os.path.join(os.environ['KFORGE_PROFILE_SCRATCH'], "
                                          "'imported'), 'w').close()\n"
                                          "def kf_forward(x, y):\n"
                                          "    out = torch.empty_like(x)\n"
                                          "    launch(x, y, out)\n"
                                          "    return out\n");
    auto targets =
        runner.profile_targets(task, artifact, work / "gated/profile", 3000, backends::HostKind::python);
    REQUIRE(targets);
    fs::create_directories(work / "gated/scratch");
    auto g = gated_run(targets->candidate, work / "gated/gate", std::chrono::milliseconds(5000),
                       (work / "gated/scratch").string(), work / "gated/scratch/imported");
    INFO(g.out << g.err);
    CHECK(g.ok());
    CHECK(fs::exists(work / "gated/scratch/imported"));
  }
  r = run_candidate("model_new",
                    "class ModelNew(torch.nn.Module):\n"
                    "    def forward(self, x, y):\n"
                    "        out = torch.empty_like(x)\n"
                    "        launch(x, y, out)\n"
                    "        return out\n");
  INFO(r.out << r.err);
  CHECK(r.ok());
  // What ncu needs (sockets, reads) is no licence to write or to start a process: the artifact
  // here skips the build's scan, so the confinement alone stops these.
  const std::string outside = "/tmp/kforge_profile_escape_" + std::to_string(::getpid());
  r = run_candidate("writes",
                    "def kf_forward(x, y):\n"
                    "    open('" +
                        outside +
                        "', 'w').write('x')\n"
                        "    out = torch.empty_like(x)\n"
                        "    launch(x, y, out)\n"
                        "    return out\n");
  INFO(r.out << r.err);
  CHECK_FALSE(r.ok());
  CHECK_FALSE(fs::exists(outside));
  r = run_candidate("spawns",
                    "def kf_forward(x, y):\n"
                    "    import os\n"
                    "    os.system('touch " +
                        outside +
                        "')\n"
                        "    out = torch.empty_like(x)\n"
                        "    launch(x, y, out)\n"
                        "    return out\n");
  INFO(r.out << r.err);
  CHECK_FALSE(r.ok());
  CHECK_FALSE(fs::exists(outside));
  // A bad tensor file is the host's error (exit 2), not a crash.
  write_file(work / "bad.bin", std::string("kforge-tensors 1\nin 0 1 4\ndata\nab"));
  auto targets_bad = [&] {
    auto t = runner.profile_targets(task, work / "kf_forward/kernel.py", work / "bad", 3000,
                                    backends::HostKind::python);
    REQUIRE(t);
    auto argv = t->candidate;
    argv[7] = (work / "bad.bin").string();
    return argv;
  }();
  r = run_argv(targets_bad, (work / "scratch").string());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("the data ends early"));
}

TEST_CASE("profile step: huge inputs are profiled on the scaled task, and the note says so",
          "[runner][profile][ncu]") {
  const fs::path work = scratch("profile-scaled");
  auto c = compile_adversarial("correct", work / "build");
  backends::RunnerClient runner(cpu_runner());
  ArgvRuns runs;
  auto po = argv_options(runs);
  po.scale = agent::scale_for_profile;
  // The fixture's 1 MiB of inputs (x, y: 256 x 512 float32) stand for a task's gigabytes.
  po.full_input_bytes = 512 * 1024;
  po.scaled_input_bytes = 64 * 1024;
  backends::NcuProfiler prof("/opt/ncu/ncu", backends::load_ncu_metrics(), po);
  auto p = prof.profile(runner, c.task, c.artifact, work / "a1", backends::HostKind::native);
  INFO(p.note);
  REQUIRE(runs.argvs.size() == 2);
  CHECK(runs.first_input == "in 0 2 64 128");  // N 256 -> 64, D 512 -> 128: what the host read
  CHECK_THAT(p.note, Catch::Contains("ncu profiled the call on smaller inputs than the judge's"));
  CHECK_THAT(p.note, Catch::Contains("N 256->64"));
  CHECK_THAT(p.note, Catch::Contains("for both the candidate and the reference"));
  // The reference was loaded scaled too (its load request is the scaled source).
  CHECK_THAT(read_file(work / "a1/profile_reference.json"), Catch::Contains("# profile ncu"));
  // Below the threshold: the task's own shapes, no note.
  po.full_input_bytes = 4 * 1024 * 1024;
  ArgvRuns full;
  po.start = backends::deferred_start(full.fn());
  backends::NcuProfiler prof2("/opt/ncu/ncu", backends::load_ncu_metrics(), po);
  auto q = prof2.profile(runner, c.task, c.artifact, work / "a2", backends::HostKind::native);
  CHECK(full.first_input == "in 0 2 256 512");
  CHECK(q.note.empty());
}

TEST_CASE("scale_for_profile: KernelBench 19_ReLU's 6.0 GiB of inputs become 96 MiB", "[profile]") {
  backends::TaskRef t;
  t.id = "level1/19_ReLU";
  t.source =
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
      "        super(Model, self).__init__()\n\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
      "        return torch.relu(x)\n\nbatch_size = 4096\ndim = 393216\n\ndef get_inputs():\n"
      "    x = torch.rand(batch_size, dim)\n    return [x]\n\ndef get_init_inputs():\n    return []\n";
  auto s = agent::scale_for_profile(t, 256.0 * 1024 * 1024);
  REQUIRE(s);
  CHECK_THAT(s->description, Catch::Contains("batch_size 4096->512"));
  CHECK_THAT(s->description, Catch::Contains("dim 393216->49152"));
  CHECK_THAT(s->description, Catch::Contains(": 96 MiB of inputs"));
  CHECK(s->task.id == t.id);
  CHECK(s->task.cache_key() != t.cache_key());  // another task for the runner and the reference cache
  // Shapes the scaling rule does not understand: no scaled task (the call is profiled as it is).
  t.source = "import torch\ndef get_inputs():\n    return [make()]\n";
  CHECK_FALSE(agent::scale_for_profile(t, 1024));
}

TEST_CASE("profile step on the GPU: ncu profiles a Triton candidate through host.py --profile", "[.gpu]") {
  const auto ncu = backends::find_ncu();
  if (!ncu) {
    WARN("SKIPPED: ncu not found (KFORGE_NCU, PATH, CUDA_HOME, /usr/local/cuda/bin)");
    return;
  }
  const fs::path work = scratch("profile-triton-gpu");
  const auto artifact = triton_artifact(work / "build",
                                        "def kf_forward(x, y):\n"
                                        "    out = torch.empty_like(x)\n"
                                        "    launch(x, y, out)\n"
                                        "    return out\n");
  backends::RunnerConfig rc;
  rc.device = "cuda:0";
  backends::RunnerClient runner(rc);
  backends::NcuProfiler prof(*ncu, backends::load_ncu_metrics());
  auto p = prof.profile(runner, adversarial_task(), artifact, work / "a1", backends::HostKind::python);
  INFO(p.note);
  if (p.note.find("ERR_NVGPUCTRPERM") != std::string::npos) {
    WARN("SKIPPED: no permission for the GPU's performance counters");
    return;
  }
  CHECK(p.note.empty());
  CHECK(p.replay_mode == "kernel");
  REQUIRE_FALSE(p.candidate.empty());
  CHECK(p.candidate.kernels[0].name.find("relu2_add_kernel") != std::string::npos);
  CHECK(p.candidate.kernels.size() == 1);  // the profiled call alone: not the warm-up, not Triton's own
  CHECK_FALSE(backends::ncu_findings(p.candidate).empty());
  CHECK_FALSE(p.reference.empty());
}
