// [verdicts] Verdicts that mean what they say (issue 9): kforge's own failures are infra_error
// (never the model's), unusable tasks cost no LLM call, the reference runs in its suite's module
// mode, integers compare exactly, tolerances scale with the output, and error figures are real.
// End to end through the real kforge binary, kforge-runner (cpu) and kforge-scripted-llm.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/attempt.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/agent/judged_checks.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/backends/cuda_precision.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/precision.hpp"
#include "kforge/benchmarks/metrics.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scripted_server.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace kforge;

namespace {

fs::path vtemp(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("kforge_verdicts_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path fixture_suite() {
  return fs::path(KFORGE_TESTS_DIR) / "fixtures/verdicts";
}
fs::path fixture_kernels() {
  return fs::path(KFORGE_TESTS_DIR) / "data/verdicts";
}
std::string kforge_bin() {
  return std::string(KFORGE_BUILD_DIR) + "/agent/kforge";
}

using kforge::test::Ran;
using kforge::test::run_cmd;
using kforge::test::slurp;
using ScriptedLlm = kforge::test::ScriptedServer;

std::string reply_with(const fs::path& kernel) {
  return "Here is the kernel.\n\n```cpp\n" + slurp(kernel) + "```\n";
}

backends::RunnerConfig cpu_runner() {
  backends::RunnerConfig rc;
  rc.device = "cpu";
  rc.check_timeout = std::chrono::milliseconds(30'000);
  return rc;
}

backends::EvalOptions quick_options() {
  backends::EvalOptions opt;
  opt.bench = false;
  opt.trials = 2;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  return opt;
}

const Task& fixture_task(const std::string& id) {
  static Suite s = load_suite(fixture_suite());
  const Task* t = s.find(id);
  INFO(id);
  REQUIRE(t);
  return *t;
}

const Suite& kb_suite() {
  static Suite s = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures/verdicts_kb");
  return s;
}

/// Compiles and judges fixture kernel data/verdicts/<kernel>/kernel.cpp against `ref`.
/// Evaluates the cpu kernel tests/data/verdicts/<kernel>/kernel.cpp against `ref` with `opt`.
backends::Evaluation judge(backends::RunnerClient& runner, const backends::TaskRef& ref,
                           const std::string& kernel, const backends::EvalOptions& opt) {
  fs::path work = fs::path(KFORGE_BUILD_DIR) / "test-scratch/verdicts" / kernel / ref.module_mode;
  fs::remove_all(work);
  return backends::evaluate(backends::get_backend("cpu"), slurp(fixture_kernels() / kernel / "kernel.cpp"),
                            work, runner, ref, opt);
}

backends::Evaluation judge(backends::RunnerClient& runner, const backends::TaskRef& ref,
                           const std::string& kernel, int trials = 3) {
  auto opt = quick_options();
  opt.trials = trials;
  return judge(runner, ref, kernel, opt);
}

}  // namespace

TEST_CASE("a task whose reference fails to load does not break the next task on the worker",
          "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto good = agent::task_ref(fixture_task("act/relu"), "");
  auto bad = agent::task_ref(fixture_task("bad/raises_at_load"), "");
  REQUIRE(runner.load(good).ok());
  auto lr = runner.load(bad);
  REQUIRE_FALSE(lr.ok());
  CHECK(lr.failure().kind == FailureKind::reference);
  CHECK(lr.failure().message.find("broken on purpose") != std::string::npos);
  fs::path work = vtemp("afterbad");
  auto ev = backends::evaluate(backends::get_backend("cpu"), slurp(fixture_kernels() / "act/relu/kernel.cpp"),
                               work, runner, good, quick_options());
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  fs::remove_all(work);
}

TEST_CASE("infra failures are infra_error records, never scored, and fill_record maps them", "[verdicts]") {
  backends::Evaluation ev;
  ev.compile.status = backends::CompileStatus::toolchain_missing;
  ev.outcome = Outcome::compile_error;
  ev.sub_kind = "toolchain_missing";
  ev.failure = FailureKind::toolchain;  // typed where it happened (compile_candidate)
  ev.message = "The cpu compiler (g++) was not found.";
  AttemptRecord rec;
  agent::fill_record(rec, ev, 0, 0);
  CHECK(rec.outcome == Outcome::infra_error);
  CHECK(rec.sub_kind == "toolchain_missing");
  CHECK(rec.failure == FailureKind::toolchain);

  backends::Evaluation ok;
  ok.compile.status = backends::CompileStatus::ok;
  ok.check = backends::CheckResult{};
  ok.check->outcome = Outcome::runtime_error;
  ok.check->sub_kind = "runner";
  ok.outcome = Outcome::infra_error;
  ok.sub_kind = "runner";
  ok.failure = FailureKind::judge;  // the client's typed failure
  agent::fill_record(rec, ok, 0, 0);
  CHECK(rec.outcome == Outcome::infra_error);
  CHECK(rec.failure == FailureKind::judge);
  // The candidate's own crash stays the candidate's: no failure kind, whatever the sub-kind says.
  ok.failure.reset();
  ok.outcome = Outcome::runtime_error;
  ok.check->sub_kind = ok.sub_kind = "runner";
  agent::fill_record(rec, ok, 0, 0);
  CHECK(rec.outcome == Outcome::runtime_error);
  CHECK_FALSE(rec.failure.has_value());
  // A bench whose worker did not start is not charged to the candidate.
  ok.check->outcome = Outcome::pass;
  ok.bench = backends::BenchResult{};
  ok.outcome = Outcome::infra_error;
  ok.sub_kind = "";
  ok.failure = FailureKind::judge;
  agent::fill_record(rec, ok, 0, 0);
  CHECK(rec.outcome == Outcome::infra_error);
  CHECK(rec.sub_kind == "judge");

  // Scoring: an infra_error is counted apart and is no model attempt.
  AttemptRecord p;
  p.task = "t";
  p.outcome = Outcome::pass;
  AttemptRecord i = p;
  i.sample = 1;
  i.outcome = Outcome::infra_error;
  i.sub_kind = "toolchain_missing";
  auto s = summarize({p, i});
  CHECK(s.overall.stats.attempts == 1);
  CHECK(s.overall.stats.infra_errors == 1);
  CHECK(s.overall.stats.llm_errors == 0);
  CHECK(s.infra_errors == 1);
  CHECK(s.overall.best.episodes == 1);
  CHECK(s.overall.best.pass_at_k.at(1) == 1.0);
}

TEST_CASE("kforge eval without g++ on PATH: infra_error, a count of unjudged attempts, exit 76",
          "[verdicts][runner]") {
  fs::path dir = vtemp("nogxx");
  fs::create_directories(dir / "emptybin");
  // A kernels folder of that one task (a folder naming no task of the suite is an error).
  fs::create_directories(dir / "kernels/act/relu");
  fs::copy_file(fixture_kernels() / "act/relu/kernel.cpp", dir / "kernels/act/relu/kernel.cpp");
  Ran r = run_cmd(
      {kforge_bin(), "eval", "--suite", fixture_suite().string(), "--backend", "cpu", "--kernels",
       (dir / "kernels").string(), "--out", (dir / "run").string(), "--no-bench", "--only", "act/relu"},
      {{"PATH", (dir / "emptybin").string()}}, dir);
  INFO(r.out << r.err);
  CHECK(r.code == agent::kExitInfraError);
  CHECK(r.out.find("1 attempt(s) could not be judged") != std::string::npos);
  auto recs = load_attempts(dir / "run").records;
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].outcome == Outcome::infra_error);
  CHECK(recs[0].sub_kind == "toolchain_missing");
  fs::remove_all(dir);
}

TEST_CASE("kforge run: a task whose reference raises at load is listed unusable and costs no LLM call",
          "[verdicts][runner]") {
  fs::path dir = vtemp("unusable");
  std::ofstream(dir / "script.json")
      << json{{"default", {{"content", reply_with(fixture_kernels() / "act/relu/kernel.cpp")}}}}.dump();
  fs::path out = dir / "run";
  Ran r;
  {
    ScriptedLlm srv(dir / "script.json", dir / "requests.jsonl");
    r = run_cmd({kforge_bin(), "run",       "--suite",    fixture_suite().string(),
                 "--backend",  "cpu",       "--llm",      "openai:scripted",
                 "--base-url", srv.url(),   "--no-bench", "--no-print-report",
                 "--samples",  "2",         "--turns",    "2",
                 "--trials",   "2",         "--tasks",    "act/relu,bad/raises_at_load",
                 "--out",      out.string()},
                {}, dir);
  }
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  int bad_requests = 0, relu_requests = 0;
  std::istringstream log(slurp(dir / "requests.jsonl"));
  for (std::string line; std::getline(log, line);) {
    auto j = json::parse(line);
    bad_requests += j["task"] == "bad/raises_at_load";
    relu_requests += j["task"] == "act/relu";
  }
  CHECK(bad_requests == 0);
  CHECK(relu_requests == 2);  // both samples pass at turn 1
  for (const auto& rec : load_attempts(out).records) {
    CHECK(rec.task == "act/relu");
    CHECK(rec.outcome == Outcome::pass);
  }
  // Listed once, with the reason: stderr, unusable.json, summary.json, report.md.
  const std::string needle = "bad/raises_at_load is unusable";
  auto first = r.err.find(needle);
  REQUIRE(first != std::string::npos);
  CHECK(r.err.find(needle, first + 1) == std::string::npos);
  auto summary = json::parse(slurp(out / "summary.json"));
  REQUIRE(summary["unusable"].contains("bad/raises_at_load"));
  CHECK(summary["unusable"]["bad/raises_at_load"].get<std::string>().find("broken on purpose") !=
        std::string::npos);
  CHECK(slurp(out / "report.md").find("## Unusable tasks") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the module mode is the suite's: KernelBench runs BatchNorm in training mode",
          "[verdicts][runner]") {
  // The loaders: KernelBench (and MultiKernelBench) tasks are "train"; kforge suites declare it.
  const Task* bn = kb_suite().find("level1/1_BatchNorm2d");
  REQUIRE(bn);
  CHECK(bn->module_mode == "train");
  CHECK(fixture_task("norm/batchnorm_train").module_mode == "train");
  CHECK(fixture_task("norm/batchnorm_eval").module_mode == "eval");
  CHECK(agent::task_ref(*bn, "").module_mode == "train");

  backends::RunnerClient runner(cpu_runner());
  auto ref = agent::task_ref(*bn, "");
  // Skipping BatchNorm passed when kforge called .eval() (x / sqrt(1 + eps) with the initial
  // running statistics); in KernelBench's mode it is wrong.
  auto ev = judge(runner, ref, "identity");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  // A real training-mode BatchNorm passes every trial (the reference's running-statistics
  // updates never show up as an input modification).
  ev = judge(runner, ref, "batchnorm_train");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  // The same file declared eval in a kforge suite: with the initial running statistics and
  // affine parameters the identity is (numerically) right on the task's own trials, and only the
  // trial with the parameters perturbed (weight and bias no longer ones and zeros) exposes it.
  ev = judge(runner, agent::task_ref(fixture_task("norm/batchnorm_eval"), ""), "identity");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.message.find("(parameters perturbed)") != std::string::npos);
  ev = judge(runner, agent::task_ref(fixture_task("norm/batchnorm_train"), ""), "identity");
  CHECK(ev.outcome == Outcome::output_mismatch);

  // The prompt states the mode.
  prompts::PromptInput in;
  in.backend = "cpu";
  in.task_id = bn->id;
  in.reference = bn->source;
  in.module_mode = "train";
  in.checks = agent::judged_checks(*bn, {{"out", "output", "float32", {4, 3, 8, 8}}}, 5,
                                   agent::precision_contract("cpu", "cpu", {}, *bn));
  auto p = prompts::render_prompt(in);
  CHECK(p.user.find("**training mode**") != std::string::npos);
  CHECK(p.user.find("statistics of the batch") != std::string::npos);
  CHECK(p.user.find("5 trials") != std::string::npos);
  CHECK(p.user.find("parameters perturbed") != std::string::npos);
  CHECK(p.user.find("atol = 0.0001") != std::string::npos);
  CHECK(p.user.find("TF32") == std::string::npos);  // a cpu prompt: no TF32 there (issue 39)
  CHECK(p.user.find("Do not update the running statistics") != std::string::npos);
}

TEST_CASE("a task whose output is random in its module mode is unjudgeable, and listed so",
          "[verdicts][runner]") {
  const Task* drop = kb_suite().find("level1/2_Dropout");
  REQUIRE(drop);
  backends::RunnerClient runner(cpu_runner());
  auto lr = runner.load(agent::task_ref(*drop, ""));
  REQUIRE_FALSE(lr.ok());
  INFO(lr.failure().message);
  CHECK(lr.failure().kind == FailureKind::reference);
  CHECK(lr.failure().sub_kind == "unjudgeable");  // typed by the runner, not read from the text
  CHECK(agent::unusable_reason(lr.failure()).rfind("unjudgeable:", 0) == 0);
  // In eval mode Dropout is the identity: the same file is judgeable.
  auto eval_ref = agent::task_ref(*drop, "");
  eval_ref.module_mode = "eval";
  CHECK(runner.load(eval_ref).ok());

  // kforge eval lists it unusable and counts it as not judged.
  fs::path dir = vtemp("dropout");
  fs::create_directories(dir / "kernels/level1/2_Dropout");
  fs::copy_file(fixture_kernels() / "act/relu/kernel.cpp", dir / "kernels/level1/2_Dropout/kernel.cpp");
  Ran r = run_cmd({kforge_bin(), "eval", "--suite",
                   (fs::path(KFORGE_TESTS_DIR) / "fixtures/verdicts_kb").string(), "--backend", "cpu",
                   "--kernels", (dir / "kernels").string(), "--out", (dir / "run").string(), "--no-bench"},
                  {}, dir);
  INFO(r.out << r.err);
  CHECK(r.code == agent::kExitInfraError);
  CHECK(r.err.find("level1/2_Dropout is unusable: unjudgeable:") != std::string::npos);
  auto recs = load_attempts(dir / "run").records;
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].outcome == Outcome::infra_error);
  CHECK(recs[0].sub_kind == "unjudgeable");
  fs::remove_all(dir);
}

TEST_CASE("integer outputs compare exactly: off by one above 2^24 is a mismatch", "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto ref = agent::task_ref(fixture_task("int/big_int64"), "");
  auto ev = judge(runner, ref, "int_off_by_one");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.sub_kind == "values");
  CHECK(ev.message.find("must match exactly") != std::string::npos);
  ev = judge(runner, ref, "int_exact");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

TEST_CASE("complex outputs: real and imaginary parts, each against its component dtype's tolerance",
          "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  for (const char* id : {"complex/mul64", "complex/mul128"}) {
    auto ref = agent::task_ref(fixture_task(id), "");
    auto ev = judge(runner, ref, "complex_mul", 2);
    INFO(id << ": " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(ev.outcome == Outcome::pass);
    // A sign error in the imaginary part: a mismatch that names the part and the tolerance used.
    ev = judge(runner, ref, "complex_mul_wrong_imag", 2);
    INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(ev.outcome == Outcome::output_mismatch);
    CHECK(ev.sub_kind == "values");
    CHECK(ev.message.find("real and imaginary parts") != std::string::npos);
    CHECK(ev.message.find("(imaginary part): expected") != std::string::npos);
    CHECK(ev.message.find(std::string("dtype ") + (id == std::string("complex/mul64")
                                                       ? "complex64, each part as float32"
                                                       : "complex128, each part as float64")) !=
          std::string::npos);
  }
  // float arithmetic: within float32's tolerance (complex64 passes), beyond float64's (complex128
  // fails): each part is held to its own component dtype.
  auto ev = judge(runner, agent::task_ref(fixture_task("complex/mul64"), ""), "complex_mul_float_math", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  ev = judge(runner, agent::task_ref(fixture_task("complex/mul128"), ""), "complex_mul_float_math", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.message.find("each part as float64") != std::string::npos);
}

TEST_CASE("the tolerance scales with the output: all zeros fails a softmax over many classes",
          "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto ref = agent::task_ref(fixture_task("softmax/many_classes"), "");
  auto ev = judge(runner, ref, "zeros", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.sub_kind == "values");
  // An honest softmax still passes under the scaled tolerance.
  ev = judge(runner, ref, "softmax", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

TEST_CASE("an infinite reference is matched only by itself", "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto ref = agent::task_ref(fixture_task("math/log_with_zeros"), "");
  auto ev = judge(runner, ref, "log_finite_floor", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  ev = judge(runner, ref, "log_exact", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

TEST_CASE("a time faster than writing the outputs at the measured peak is a timing_anomaly, never credited",
          "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto ref = agent::task_ref(fixture_task("act/relu_large"), "");
  auto opt = quick_options();
  opt.bench = true;
  opt.bench_options.reps = 10;
  opt.bench_options.budget_ms = 500;
  auto ev = judge(runner, ref, "act/relu", opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.outcome == Outcome::pass);
  REQUIRE(ev.bench);
  REQUIRE(ev.bench->ok);
  CHECK(ev.bench->peak_bytes_per_s > 1e8);  // measured by the judge
  CHECK(ev.bench->speed_of_light_ms > 0);   // 96 MiB of outputs, 32 MiB beyond the cache allowance
  CHECK(ev.bench->candidate_ms > ev.bench->speed_of_light_ms);
  CHECK(ev.bench->timing_anomaly.empty());
  CHECK(ev.bench->speedup_ci_low > 0);
  // The same kernel on a device said to write 1 MB/s: its time is impossible there.
  opt.bench_options.peak_bytes_per_s = 1e6;
  ev = judge(runner, ref, "act/relu", opt);
  REQUIRE(ev.bench);
  INFO(ev.bench->timing_anomaly);
  CHECK(ev.bench->timing_anomaly.find("faster than writing its outputs") != std::string::npos);
  AttemptRecord rec;
  agent::fill_record(rec, ev, 0, 0);
  CHECK(rec.passed());
  CHECK_FALSE(rec.has_speedup());
  CHECK(rec.timing_anomaly == ev.bench->timing_anomaly);
}

TEST_CASE("error figures are real on passes", "[verdicts][runner]") {
  backends::RunnerClient runner(cpu_runner());
  auto ev = judge(runner, agent::task_ref(fixture_task("act/relu"), ""), "relu_plus_2e-5", 2);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.outcome == Outcome::pass);
  REQUIRE(ev.check);
  CHECK(ev.check->max_abs_err > 1.5e-5);
  CHECK(ev.check->max_abs_err < 2.5e-5);
  // |a - b| / (|b| + atol): the floor keeps relu's zeros from giving 2e-5 / 1e-12.
  CHECK(ev.check->max_rel_err < 0.25);
  CHECK(ev.check->max_rel_err > 0.1);
  AttemptRecord rec;
  agent::fill_record(rec, ev, 0, 0);
  CHECK(rec.max_abs_err == ev.check->max_abs_err);
  // Records carry the tolerance ratio and the precision fields through attempts.jsonl.
  rec.tolerance_ratio = 0.2;
  rec.precision = "tf32";
  rec.precision_disallowed = true;
  rec.module_mode = "train";
  auto back = attempt_from_json(to_json(rec));
  CHECK(back.tolerance_ratio == 0.2);
  CHECK(back.precision == "tf32");
  CHECK(back.precision_disallowed);
  CHECK(back.module_mode == "train");
}

TEST_CASE("the timed repetitions are verified against the task's declared tolerance, as the check is",
          "[verdicts][runner]") {
  // relu + 1e-3: outside the fp32 default (1e-4), inside act/relu_loose's declared 1e-2. Before,
  // the bench request carried no tolerances, so a kernel the check passed was refused as "wrong
  // on a timed repetition" (found on matmul/gemm's cpu exemplar, whose task declares 1e-2).
  backends::RunnerClient runner(cpu_runner());
  auto opt = quick_options();
  opt.bench = true;
  opt.bench_options.reps = 10;
  auto ev = judge(runner, agent::task_ref(fixture_task("act/relu_loose"), ""), "relu_plus_1e-3", opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  REQUIRE(ev.bench);
  CHECK(ev.bench->ok);
  // The default tolerance still holds where the task declares none.
  auto strict = judge(runner, agent::task_ref(fixture_task("act/relu"), ""), "relu_plus_1e-3", 2);
  CHECK(strict.outcome == Outcome::output_mismatch);
}

TEST_CASE("SASS parsing finds tensor-core math and its operand types", "[verdicts]") {
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/sass";
  for (const char* f : {"mma_sm80.sass", "mma_sm90.sass"}) {
    INFO(f);
    const std::string sass = slurp(dir / f);
    auto r = backends::parse_sass_precision(sass);
    CHECK(r.inspected);
    CHECK(r.kinds == std::set<std::string>{"bf16", "fp16", "tf32"});
    CHECK(r.joined() == "bf16,fp16,tf32");
    // Function by function: the plain fp32 kernel (whose HFMA2.MMA moves constants) has none.
    std::map<std::string, std::set<std::string>> by_fn;
    std::string::size_type pos = 0;
    while ((pos = sass.find("Function : ", pos)) != std::string::npos) {
      auto end = sass.find("Function : ", pos + 1);
      auto name_end = sass.find('\n', pos);
      std::string name = sass.substr(pos + 11, name_end - pos - 11);
      by_fn[name] =
          backends::parse_sass_precision(sass.substr(pos, end == std::string::npos ? end : end - pos)).kinds;
      pos = pos + 1;
    }
    CHECK(by_fn["_Z5plainPKfPfi"].empty());
    CHECK(by_fn["_Z3t32PKfS0_Pf"] == std::set<std::string>{"tf32"});
    CHECK(by_fn["_Z3b16PK13__nv_bfloat16S1_Pf"] == std::set<std::string>{"bf16"});
    CHECK(by_fn["_Z3h16PK6__halfS1_Pf"] == std::set<std::string>{"fp16"});
  }
  // Warpgroup (sm_90a wgmma) and integer / fp8 forms, as cuobjdump prints them (hand-written).
  auto r = backends::parse_sass_precision(
      "        /*0400*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;   /* 0x... "
      "*/\n"
      "        /*0410*/              @P0  HGMMA.64x64x8.F32.TF32 R24, gdesc[UR8], R24 ;   /* 0x... */\n"
      "        /*0420*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR4], RZ ;  /* 0x... */\n"
      "        /*0430*/                   IMMA.16832.S8.S8 R4, R8, R12, R4 ;  /* 0x... */\n"
      "        /*0440*/                   DMMA.8x8x4 R4, R8, R12, R4 ;  /* 0x... */\n");
  CHECK(r.kinds == std::set<std::string>{"bf16", "fp8", "int8", "tf32"});
  // cpu artifacts: nothing to inspect. Which backend inspects is the backend's to say.
  CHECK_FALSE(backends::get_backend("cpu").inspect_precision("/nonexistent.so").inspected);
  CHECK(backends::get_backend("cuda").inspects_precision());
  CHECK_FALSE(backends::get_backend("cpu").inspects_precision());
  CHECK_FALSE(backends::get_backend("triton").inspects_precision());

  // The inspection done at build time (on a compile slot) is the one recorded: the judge's
  // stage does not disassemble again (the artifact here does not even exist).
  {
    backends::Evaluation ev;
    ev.compile.status = backends::CompileStatus::ok;
    ev.compile.artifact = "/nonexistent/kernel.so";
    ev.precision = backends::PrecisionReport{};
    ev.precision->inspected = true;
    ev.precision->kinds = {"tf32"};
    backends::LoadResult load;
    load.outputs.push_back({"out", "output", "float32", {4}});
    AttemptRecord rec;
    rec.outcome = Outcome::pass;
    agent::record_precision(rec, ev, "cuda", load, {});
    CHECK(rec.precision == "tf32");
    CHECK(rec.precision_disallowed);
    agent::record_precision(rec, ev, "cuda", load, {"tf32"});
    CHECK_FALSE(rec.precision_disallowed);
  }

  // The contract: below the task's dtype and not allowed.
  using S = std::set<std::string>;
  CHECK(backends::disallowed_precision({"tf32"}, {"float32"}, {}) == S{"tf32"});
  CHECK(backends::disallowed_precision({"tf32"}, {"float32"}, {"tf32"}).empty());
  CHECK(backends::disallowed_precision({"fp16", "tf32"}, {"float32"}, {"tf32"}) == S{"fp16"});
  CHECK(backends::disallowed_precision({"fp16"}, {"float16"}, {}).empty());
  CHECK(backends::disallowed_precision({"fp8"}, {"float16"}, {}) == S{"fp8"});
  CHECK(backends::disallowed_precision({"fp16"}, {"int64"}, {}).empty());

  // TF32 where the reference itself uses it: cuDNN convolutions (KernelBench, inferred from the
  // source), or declared by a kforge suite; fp32 elsewhere.
  CHECK(kb_suite().find("level1/3_Conv2d")->allow_precision == std::vector<std::string>{"tf32"});
  CHECK(kb_suite().find("level1/1_BatchNorm2d")->allow_precision.empty());
  CHECK(fixture_task("norm/batchnorm_eval").allow_precision == std::vector<std::string>{"tf32"});
  CHECK(fixture_task("act/relu").allow_precision.empty());
}

TEST_CASE("a pass with disallowed precision is not credited; the report shows both views", "[verdicts]") {
  AttemptRecord a;
  a.task = "mm";
  a.outcome = Outcome::pass;
  a.speedup = 4.0;
  a.precision = "tf32";
  a.precision_disallowed = true;
  AttemptRecord b = a;
  b.task = "add";
  b.speedup = 1.0;
  b.precision.clear();
  b.precision_disallowed = false;
  auto s = summarize({a, b});
  CHECK(s.precision_disallowed == 1);
  CHECK(s.overall.best.speedup_tasks == 1);
  CHECK(std::fabs(s.overall.best.geomean_speedup - 1.0) < 1e-9);
  CHECK(std::fabs(s.overall.best.pass_at_k.at(1) - 1.0) < 1e-9);  // still correct
  CHECK(s.credit_all_precision.speedup_tasks == 2);
  CHECK(std::fabs(s.credit_all_precision.geomean_speedup - 2.0) < 1e-9);
  auto md = render_report_md(s);
  CHECK(md.find("**Precision:** 1 passing attempt") != std::string::npos);
  CHECK(md.find("geomean speedup 2.00x") != std::string::npos);
}

TEST_CASE(
    "kforge run without g++: infra_error turns, never shown to the model, stop at --max-infra-failures "
    "(exit 76), asked again on --resume",
    "[verdicts][runner]") {
  fs::path dir = vtemp("runnogxx");
  fs::create_directories(dir / "emptybin");
  // Each reply 250 ms late: the missing compiler's failures are seen long before all eight
  // samples have a reply, so the stop after two of them leaves episodes unasked (on a loaded
  // machine, instant replies let all eight in before the second failure was seen).
  std::ofstream(dir / "script.json") << json{
      {"default",
       {{"content", reply_with(fixture_kernels() / "act/relu/kernel.cpp")},
        {"delay_ms", 250}}}}.dump();
  fs::path out = dir / "run";
  const std::vector<std::string> common{"--suite",
                                        fixture_suite().string(),
                                        "--backend",
                                        "cpu",
                                        "--llm",
                                        "openai:scripted",
                                        "--no-bench",
                                        "--no-print-report",
                                        "--tasks",
                                        "act/relu",
                                        "--samples",
                                        "8",
                                        "--turns",
                                        "3",
                                        "--llm-concurrency",
                                        "1",
                                        "--compile-jobs",
                                        "1"};
  {
    ScriptedLlm srv(dir / "script.json", dir / "requests.jsonl");
    std::vector<std::string> a{kforge_bin(), "run",        "--base-url",           srv.url(),
                               "--out",      out.string(), "--max-infra-failures", "2"};
    a.insert(a.end(), common.begin(), common.end());
    Ran r = run_cmd(a, {{"PATH", (dir / "emptybin").string()}}, dir);
    INFO(r.out << r.err);
    CHECK(r.code == agent::kExitInfraError);
    CHECK(r.err.find("could not be judged") != std::string::npos);
  }
  auto recs = load_attempts(out).records;
  REQUIRE(recs.size() >= 2);
  CHECK(recs.size() < 8);  // stopped after 2 in a row (episodes in flight may finish their turn)
  for (const auto& rec : recs) {
    CHECK(rec.outcome == Outcome::infra_error);
    CHECK(rec.sub_kind == "toolchain_missing");
    CHECK(rec.turn == 1);  // the episode pauses: no turn is spent on kforge's failure
  }
  auto summary = json::parse(slurp(out / "summary.json"));
  CHECK(summary["infra_errors"] == recs.size());
  CHECK(summary["overall"]["attempts"]["attempts"] == 0);

  // With the toolchain back, --resume asks those turns again, and no prompt ever carried the
  // toolchain's message.
  ScriptedLlm srv(dir / "script.json", dir / "requests2.jsonl");
  Ran r = run_cmd(
      {kforge_bin(), "run", "--resume", out.string(), "--base-url", srv.url(), "--no-print-report"}, {}, dir);
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  auto summary2 = json::parse(slurp(out / "summary.json"));
  CHECK(summary2["overall"]["attempts"]["passed"] == 8);
  CHECK(summary2["infra_errors"] == 0);
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.path().filename() == "prompt.md") CHECK(slurp(e.path()).find("was not found") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE(
    "every parameter and a wider input range are checked: ignoring LayerNorm's affine or "
    "approximating GELU fails",
    "[verdicts][runner]") {
  static Suite kb = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures/checks_kb");
  backends::RunnerClient runner(cpu_runner());
  // Weight ones and bias zeros: the task's own trials cannot tell; the perturbed trial can.
  auto ln = agent::task_ref(*kb.find("level1/4_LayerNorm"), "");
  auto ev = judge(runner, ln, "layernorm_no_affine");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.message.find("(parameters perturbed)") != std::string::npos);
  // The mismatch names its trial: kind, seed, input scale (issue 39 §5).
  CHECK(std::regex_search(ev.message, std::regex(R"(trial \d+ of \d+ \(parameters perturbed\): seed \d+, )"
                                                 R"(inputs from get_inputs\(\) \(unscaled\), output ')")));
  REQUIRE(ev.check);
  CHECK(ev.check->trial.kind == "parameters perturbed");
  CHECK(ev.check->trial.index == ev.check->trial.of - 1);
  // torch.rand inputs in [0, 1): the tanh GELU is within tolerance there, not on wider inputs.
  auto gelu = agent::task_ref(*kb.find("level1/5_GELU"), "");
  ev = judge(runner, gelu, "gelu_tanh_approx");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::output_mismatch);
  CHECK(ev.message.find("(wider inputs)") != std::string::npos);
  CHECK(std::regex_search(ev.message,
                          std::regex(R"(\(wider inputs\): seed \d+, scaled-normal inputs \(scale )")));
  REQUIRE(ev.check);
  CHECK(ev.check->trial.kind == "wider inputs");
  CHECK(ev.check->trial.input_scale >= 1.0);
  CHECK(ev.check->trial.seed > 0);
  ev = judge(runner, gelu, "gelu_exact");
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

TEST_CASE(
    "on wider inputs, float32 cancellation is judged against float64: a fused multiply-add "
    "Horner passes",
    "[verdicts][runner]") {
  static Suite kb = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures/checks_kb");
  backends::RunnerClient runner(cpu_runner());
  auto horner = agent::task_ref(*kb.find("level1/6_Horner"), "");
  int judged_against_float64 = 0;
  for (int64_t seed = 1; seed <= 8; ++seed) {
    auto opt = quick_options();
    opt.seed = seed;
    auto ev = judge(runner, horner, "horner_fma", opt);
    INFO("seed " << seed << ": " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(ev.outcome == Outcome::pass);
    REQUIRE(ev.check);
    for (const auto& line : ev.check->checks)
      judged_against_float64 += line.find("float64") != std::string::npos;
  }
  // With PyTorch 2.11 (the GPU machine) some of these seeds make float32 cancel beyond its
  // tolerance and the float64 look decides them; PyTorch 2.15's CPU kernels round the reference
  // so that none does. Every seed must pass either way (above); the count is reported.
  if (judged_against_float64 == 0) WARN("no seed needed the float64 look with this PyTorch");
}

TEST_CASE("issue 9's verdict cases hold on the cuda backend", "[.gpu]") {
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/verdicts_cuda";
  const auto manifest = json::parse(slurp(dir / "manifest.json"));
  backends::RunnerConfig rc;
  rc.device = "cuda:0";
  rc.check_timeout = std::chrono::milliseconds(60'000);
  backends::RunnerClient runner(rc);
  std::map<std::string, Suite> suites;
  int judged = 0;
  for (const auto& c : manifest.at("cases")) {
    const std::string suite = c.at("suite"), task = c.at("task"), kernel = c.at("kernel");
    if (!suites.count(suite))
      suites.emplace(suite, load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures" / suite));
    const Task* t = suites.at(suite).find(task);
    REQUIRE(t);
    auto ref = agent::task_ref(*t, "");
    auto opt = quick_options();
    opt.bench = c.value("bench", false);
    opt.bench_options.reps = 10;
    opt.bench_options.peak_bytes_per_s = c.value("peak_bytes_per_s", 0.0);
    for (int64_t seed : c.value("seeds", std::vector<int64_t>{-1})) {
      opt.seed = seed;
      fs::path work = fs::path(KFORGE_BUILD_DIR) / "test-scratch/verdicts_cuda" / kernel;
      fs::remove_all(work);
      auto ev = backends::evaluate(backends::get_backend("cuda"), slurp(dir / kernel / "kernel.cu"), work,
                                   runner, ref, opt);
      INFO(kernel << " on " << task << " (seed " << ev.seed << "): " << to_string(ev.outcome) << "/"
                  << ev.sub_kind << ": " << ev.message);
      CHECK(std::string(to_string(ev.outcome)) == c.at("outcome").get<std::string>());
      if (c.contains("timing_anomaly")) {
        REQUIRE(ev.bench);
        INFO("speed of light " << ev.bench->speed_of_light_ms << " ms at " << ev.bench->peak_bytes_per_s / 1e9
                               << " GB/s; candidate " << ev.bench->candidate_ms << " ms");
        CHECK(ev.bench->timing_anomaly.empty() != c.at("timing_anomaly").get<bool>());
      }
      std::printf("[verdicts cuda] %-20s %-22s -> %s %s\n", kernel.c_str(), task.c_str(),
                  std::string(to_string(ev.outcome)).c_str(),
                  ev.bench && !ev.bench->timing_anomaly.empty() ? "(timing_anomaly)" : "");
      ++judged;
    }
  }
  CHECK(judged >= 17);
  CHECK(runner.workers_started() == 1);
}
