// End-to-end tests of the evaluation core through the real kforge-runner: the kforge-core
// references under the ci profile, the shipped exemplars, and the adversarial kernels.
// GPU variants are tagged [.gpu] (hidden); CTest runs them as the `gpu` test, which the
// test main skips (exit 77) when no GPU is present.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "catch.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

backends::RunnerConfig runner_config(const std::string& device) {
  backends::RunnerConfig rc;
  rc.device = device;
  rc.check_timeout = std::chrono::milliseconds(20'000);
  return rc;
}

const Suite& core_suite() {
  static Suite s = load_suite(kforge_home() / "benchmarks/suites/kforge-core");
  return s;
}

void run_exemplars(const std::string& backend_name, const std::string& device, const std::string& profile) {
  const backends::Backend& backend = backends::get_backend(backend_name);
  backends::RunnerClient runner(runner_config(device));
  fs::path root = kforge_home() / "prompts/exemplars" / backend_name;
  fs::path work = scratch("exemplars-" + backend_name);
  backends::EvalOptions opt;
  opt.bench = false;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  int checked = 0;
  for (const auto& t : core_suite().tasks) {
    fs::path k = root / t.id / backend.source_file_name();
    if (!fs::exists(k)) continue;
    auto ev =
        backends::evaluate(backend, read_file(k), work / t.id, runner, agent::task_ref(t, profile), opt);
    INFO(t.id << ": " << to_string(ev.outcome) << " " << ev.sub_kind << "\n" << ev.message);
    CHECK(ev.outcome == Outcome::pass);
    ++checked;
  }
  CHECK(checked >= 14);  // at least one exemplar per category
}

void run_adversarial(const std::string& backend_name, const std::string& device) {
  fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/adversarial";
  auto manifest = nlohmann::json::parse(read_file(dir / "manifest.json"));
  auto parsed = parse_task_file(dir / manifest.value("task", "task.py"), "adversarial/relu2_add");
  REQUIRE(parsed.task);
  const backends::Backend& backend = backends::get_backend(backend_name);
  backends::RunnerClient runner(runner_config(device));
  backends::EvalOptions opt;
  opt.bench = true;
  opt.bench_options.reps = 5;
  opt.bench_options.min_reps = 3;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  auto task = agent::task_ref(*parsed.task, "");
  runner.bench(task, {}, opt.bench_options, backends::HostKind::native);  // warm the reference
  fs::path work = scratch("adversarial-" + backend_name);
  int judged = 0;
  for (const auto& k : manifest["kernels"]) {
    std::string name = k["name"];
    if (!k["expect"].contains(backend_name)) continue;
    fs::path src = dir / name / backend.source_file_name();
    if (!fs::exists(src)) continue;
    const auto& want = k["expect"][backend_name];
    // Never-returning kernels: a short check limit keeps the test quick.
    auto ev = backends::evaluate(backend, read_file(src), work / name, runner, task, opt);
    INFO(name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(std::string(to_string(ev.outcome)) == want["outcome"].get<std::string>());
    if (want.contains("sub_kind")) CHECK(ev.sub_kind == want["sub_kind"].get<std::string>());
    // An attack that passes must not have inflated its speedup.
    if (want.contains("max_speedup") && ev.outcome == Outcome::pass) {
      REQUIRE(ev.bench);
      INFO("speedup " << ev.bench->speedup);
      CHECK(ev.bench->speedup <= want["max_speedup"].get<double>());
    }
    // The next kernel is judged normally: the worker survived or was replaced.
    ++judged;
  }
  CHECK(judged >= 34);
  // After all that, a correct kernel still passes.
  auto ev = backends::evaluate(backend, read_file(dir / "correct" / backend.source_file_name()),
                               work / "again", runner, task, opt);
  CHECK(ev.outcome == Outcome::pass);
  // Every candidate ran in its own candidate host: none of them took the judge down.
  CHECK(runner.workers_started() == 1);
}

}  // namespace

TEST_CASE("every kforge-core reference runs under the ci profile", "[runner]") {
  const Suite& s = core_suite();
  REQUIRE(s.skipped.empty());
  REQUIRE(s.tasks.size() >= 42);
  backends::RunnerClient runner(runner_config("cpu"));
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& t : s.tasks) {
    auto ref = agent::task_ref(t, "ci");
    auto lr = runner.load(ref);
    INFO(t.id << ": " << (lr ? "" : lr.failure().message));
    REQUIRE(lr.ok());
    CHECK_FALSE(lr->outputs.empty());
    CHECK(lr->flops >= 0);  // pure data movement (gather, nearest upsample) does no FLOP
    CHECK(lr->bytes > 0);
    auto ran = runner.reference_only(ref, 5, 1000);
    INFO((ran ? "" : ran.failure().message));
    CHECK(ran.ok());
  }
  double s_total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("all references: " << s_total << " s");
  CHECK(s_total < 120);
}

TEST_CASE("every cpu exemplar passes under the ci profile", "[runner]") {
  run_exemplars("cpu", "cpu", "ci");
}

TEST_CASE("adversarial cpu kernels get their expected outcomes", "[runner]") {
  run_adversarial("cpu", "cpu");
}

TEST_CASE("an artifact the judge cannot read is the judge's infra_error, never the candidate's", "[runner]") {
  // The host gets the artifact's bytes as the judge's sealed memfd (candidate_host.hpp): what
  // fails before the candidate's own code runs is kforge's failure, typed where it happens.
  auto parsed =
      parse_task_file(fs::path(KFORGE_TESTS_DIR) / "data/adversarial/task.py", "adversarial/relu2_add");
  REQUIRE(parsed.task);
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path dir = scratch("unreadable-artifact");
  for (const auto& [name, host] : {std::pair{"kernel.so", backends::HostKind::native},
                                   std::pair{"kernel.py", backends::HostKind::python}}) {
    const fs::path artifact = dir / name;
    fs::create_directories(artifact);  // opens, but no byte of it reads: EISDIR
    auto c = runner.check(agent::task_ref(*parsed.task, ""), artifact, 1, 7, host);
    INFO(name << ": " << to_string(c.outcome) << "/" << c.sub_kind << ": " << c.message);
    CHECK(c.outcome == Outcome::infra_error);
    REQUIRE(c.failure.has_value());
    CHECK(*c.failure == FailureKind::judge);
    CHECK(c.message.find("cannot") != std::string::npos);
  }
}

TEST_CASE("a judge's error reply is typed once: reference failures, unknown values", "[runner]") {
  CHECK(backends::judge_error_from_string("reference_failed") == backends::JudgeError::reference_failed);
  CHECK(backends::judge_error_from_string("runner") == backends::JudgeError::runner);
  CHECK_FALSE(backends::judge_error_from_string("judge_says_model_failed").has_value());
  auto f = backends::judge_failure(backends::JudgeError::unjudgeable, "its runs disagree");
  CHECK(f.kind == FailureKind::reference);
  CHECK(f.sub_kind == "unjudgeable");
  CHECK(backends::reference_unusable(f.kind));
  // The kind travels typed: a reference_failed whose text happens to say "unjudgeable:" stays failed.
  auto t = backends::judge_failure(backends::JudgeError::reference_failed, "unjudgeable: its runs disagree");
  CHECK(t.kind == FailureKind::reference);
  CHECK(t.sub_kind == "reference_failed");
  auto g = backends::judge_failure(backends::JudgeError::python_exception, "Traceback ...");
  CHECK(g.kind == FailureKind::judge);
  CHECK_FALSE(backends::reference_unusable(g.kind));
}

TEST_CASE("the worker keeps recent tasks loaded; a kernel cannot corrupt a task's parameters", "[runner]") {
  fs::path fx = fs::path(KFORGE_TESTS_DIR) / "fixtures/multikernelbench/reference";
  auto mlp = parse_task_file(fx / "arch/tiny_mlp.py", "arch/tiny_mlp");
  auto add = parse_task_file(fx / "fuse/add_relu.py", "fuse/add_relu");
  REQUIRE(mlp.task);
  REQUIRE(add.task);
  auto mlp_ref = agent::task_ref(*mlp.task, ""), add_ref = agent::task_ref(*add.task, "");
  backends::RunnerClient runner(runner_config("cpu"));
  auto first = runner.load(mlp_ref);
  REQUIRE(first.ok());
  CHECK_FALSE(first->cached);
  REQUIRE(first->inputs.size() == 3);  // x, fc.weight, fc.bias
  CHECK(runner.load(add_ref).ok());
  auto again = runner.load(mlp_ref);  // switching back selects the held model
  REQUIRE(again.ok());
  CHECK(again->cached);

  // out = relu(x W^T + b). The first kernel is right but zeroes W afterwards (on the cpu the
  // parameters are mapped read-only into the candidate host: the write faults); the second
  // ignores W. Were W zeroed in the judge, the reference would become relu(b) and the second pass.
  const std::string head = R"(#include "kforge/kernel_abi.h"
#include <cstdint>
extern "C" int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)stream;
  if (n_in != 3 || n_out != 1) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* w = static_cast<float*>(in[1].data);
  const float* b = static_cast<const float*>(in[2].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t B = in[0].sizes[0], D = in[0].sizes[1];
  for (int64_t i = 0; i < B; ++i)
    for (int64_t o = 0; o < D; ++o) {
      float acc = b[o];
)";
  const std::string zeroes_w =
      head + R"(      for (int64_t k = 0; k < D; ++k) acc += x[i * D + k] * w[o * D + k];
      y[i * D + o] = acc > 0 ? acc : 0;
    }
  for (int64_t k = 0; k < D * D; ++k) w[k] = 0;
  return 0;
}
)";
  const std::string ignores_w = head + R"(      y[i * D + o] = acc > 0 ? acc : 0;
    }
  return 0;
}
)";
  const backends::Backend& cpu = backends::get_backend("cpu");
  backends::EvalOptions opt;
  opt.bench = false;
  opt.trials = 2;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  fs::path work = scratch("param-restore");
  auto ev = backends::evaluate(cpu, zeroes_w, work / "zeroes_w", runner, mlp_ref, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::runtime_error);
  CHECK(ev.sub_kind == "segfault");
  ev = backends::evaluate(cpu, ignores_w, work / "ignores_w", runner, mlp_ref, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.sub_kind == "values");
  CHECK(runner.workers_started() == 1);
}

TEST_CASE("every cuda exemplar passes at the default profile", "[.gpu]") {
  run_exemplars("cuda", "cuda:0", "");
}

TEST_CASE("adversarial cuda kernels get their expected outcomes", "[.gpu]") {
  run_adversarial("cuda", "cuda:0");
}

TEST_CASE("a candidate's copies cannot run ahead of the judge's clock on a copy engine", "[.gpu]") {
  // tests/data/adversarial_copy: x.clone() against one cudaMemcpyAsync. The batch is timed from
  // the judge's lead-in kernel's end; a copy that a copy engine carried out during the lead-in
  // would be outside that interval and read as a speedup well above the reference's own copy.
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/adversarial_copy";
  auto parsed = parse_task_file(dir / "task.py", "adversarial/copy");
  REQUIRE(parsed.task);
  const auto task = agent::task_ref(*parsed.task, "");
  backends::RunnerClient runner(runner_config("cuda:0"));
  backends::EvalOptions opt;
  opt.bench = true;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  auto ev = backends::evaluate(backends::get_backend("cuda"), read_file(dir / "kernel.cu"),
                               scratch("adversarial-copy") / "copy_only", runner, task, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.outcome == Outcome::pass);
  REQUIRE(ev.bench);
  std::printf("[copy engine] copy_only: speedup %.3f (candidate %.4f ms, reference %.4f ms)\n",
              ev.bench->speedup, ev.bench->candidate_ms, ev.bench->reference_ms);
  CHECK(ev.bench->speedup <= 1.5);
}

TEST_CASE("kernels of two CUDA contexts never run at once on the GPU (what the lead-in assumes)", "[.gpu]") {
  // tests/data/context_overlap/probe.cu: process A spins one thread for 2 ms (the lead-in's
  // shape); process B, told once the spin runs, launches work on every SM. Were kernels of two
  // contexts run side by side (MPS, or a GPU that shares SMs across contexts), B's work would
  // start during the spin, and a candidate's kernels could run before the judge's clock starts
  // without the spin seeing any gap. Five trials, each B after A's end.
  const auto nvcc = backends::get_backend("cuda").find_compiler({});
  if (!nvcc) FAIL("no nvcc to build tests/data/context_overlap/probe.cu (the cuda backend needs it too)");
  const fs::path dir = scratch("context-overlap");
  sandbox::Spec build;
  build.argv = {nvcc->string(),
                "-O2",
                "-I",
                (fs::path(KFORGE_TESTS_DIR) / "../backends/judge").string(),
                "-o",
                (dir / "probe").string(),
                (fs::path(KFORGE_TESTS_DIR) / "data/context_overlap/probe.cu").string()};
  build.limits.wall = std::chrono::milliseconds(180'000);
  auto built = sandbox::run(build);
  INFO(built.err);
  REQUIRE(built.ok());
  sandbox::Spec probe;
  probe.argv = {(dir / "probe").string()};
  probe.limits.wall = std::chrono::milliseconds(60'000);
  auto ran = sandbox::run(probe);
  INFO(ran.out << ran.err);
  REQUIRE(ran.ok());
  std::map<int, std::map<std::string, std::vector<double>>> trials;
  std::istringstream lines(ran.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    int trial = -1;
    std::string who;
    f >> trial >> who;
    for (double v; f >> v;) trials[trial][who].push_back(v);
  }
  REQUIRE(trials.size() == 5);
  for (auto& [trial, r] : trials) {
    REQUIRE(r["A"].size() == 3);
    REQUIRE(r["B"].size() == 2);
    const double spin_end = r["A"][1], gap_us = r["A"][2], work_start = r["B"][0];
    std::printf(
        "[context overlap] trial %d: the other context's work starts %.1f us after the spin's end "
        "(the spin's largest gap %.2f us)\n",
        trial, (work_start - spin_end) / 1e3, gap_us);
    CHECK(work_start >= spin_end);
  }
}

TEST_CASE("the judge measures its device's peaks: DRAM bandwidth and FP32 FLOP/s", "[runner]") {
  backends::RunnerClient runner(runner_config("cpu"));
  auto p = runner.measure_peaks();
  REQUIRE(p);
  INFO(p->dram_bytes_per_s / 1e9 << " GB/s, " << p->flops_per_s / 1e9 << " GFLOP/s; " << p->method);
  CHECK(p->dram_bytes_per_s > 1e8);  // any machine fills memory faster than 0.1 GB/s
  CHECK(p->dram_bytes_per_s < 1e13);
  CHECK(p->flops_per_s > 1e8);
  CHECK(p->flops_per_s < 1e15);
  CHECK(p->method.find("TF32 off") != std::string::npos);
}

TEST_CASE("the judge measures the GPU's peaks", "[.gpu]") {
  backends::RunnerClient runner(runner_config("cuda:0"));
  auto p = runner.measure_peaks();
  REQUIRE(p);
  std::printf("[peaks] cuda:0: %.1f GB/s, %.2f TFLOP/s FP32; %s\n", p->dram_bytes_per_s / 1e9,
              p->flops_per_s / 1e12, p->method.c_str());
  CHECK(p->dram_bytes_per_s > 1e11);  // any CUDA GPU of the last decade: > 100 GB/s
  CHECK(p->dram_bytes_per_s < 2e13);
  CHECK(p->flops_per_s > 1e12);
  CHECK(p->flops_per_s < 2e14);
}

TEST_CASE("a fatal signal in the judge leaves its origin and native stack on stderr", "[runner]") {
  // The client turns a dead judge into infra_error/judge_died with its stderr's tail: the crash
  // report must be there (and the process must still die of the signal).
  sandbox::Spec spec;
  spec.argv = {backends::default_runner_path().string()};
  spec.limits.max_file_bytes = 0;
  std::string error;
  auto child = sandbox::LineChild::start(spec, &error);
  REQUIRE(child);
  auto ready = child->read_line(std::chrono::milliseconds(120'000));
  REQUIRE(ready);
  REQUIRE(ready->find("\"ready\":true") != std::string::npos);
  REQUIRE(::kill(child->pid(), SIGSEGV) == 0);
  auto res = child->wait();
  CHECK(res.status == sandbox::Status::signalled);
  CHECK(res.term_signal == SIGSEGV);
  const std::string tail = child->stderr_tail();
  INFO(tail);
  CHECK(tail.find("kforge-runner: fatal signal 11") != std::string::npos);
  CHECK(tail.find("native stack") != std::string::npos);
  CHECK(tail.find("Fatal Python error: Segmentation fault") != std::string::npos);  // faulthandler after it
}
