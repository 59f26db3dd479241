// The triton backend end to end: extraction, the build (the static scan), and Triton candidates
// judged through the real kforge-runner and its Triton candidate host (backends/triton/host.py).
// Without a GPU the host runs the kernels under Triton's interpreter on the CPU; the [.gpu]
// variants run them on cuda:0.
#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "adversarial_task.hpp"
#include "catch.hpp"
#include "kforge/agent/attempt.hpp"
#include "kforge/agent/attempt_record.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/tritonbench_perf.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

const fs::path kAdversarial = fs::path(KFORGE_TESTS_DIR) / "data/adversarial";

backends::RunnerConfig runner_config(const std::string& device) {
  backends::RunnerConfig rc;
  rc.device = device;
  rc.check_timeout = std::chrono::milliseconds(60'000);
  return rc;
}

backends::EvalOptions check_only() {
  backends::EvalOptions opt;
  opt.bench = false;
  opt.trials = 2;
  return opt;
}

/// check_only() with a short bench.
backends::EvalOptions short_bench() {
  backends::EvalOptions opt = check_only();
  opt.bench = true;
  opt.bench_options.reps = 3;
  opt.bench_options.min_reps = 2;
  opt.bench_options.warmup = 1;
  return opt;
}

/// A short bench of a TritonBench task's performance inputs: two of them (the first and the last).
backends::BenchOptions short_perf_bench() {
  backends::BenchOptions bo;
  bo.reps = 4;
  bo.min_reps = 3;
  bo.warmup = 1;
  bo.budget_ms = 100;
  bo.perf_inputs = 2;
  return bo;
}

/// The correct Triton relu_scale of the recorded TritonBench run's replies (its python block).
std::string relu_scale_candidate() {
  const std::string md = read_file(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_run/replies/relu_scale.md");
  const auto from = md.find("```python\n") + 10;
  return md.substr(from, md.find("```", from) - from);
}

/// A bench's flags, one a line.
std::string joined(const std::vector<std::string>& flags) {
  std::string s;
  for (const auto& f : flags) s += f + "\n";
  return s;
}

const backends::Backend& triton() {
  return backends::get_backend("triton");
}

/// Every adversarial Triton candidate gets its manifest's outcome (and rule or sub-kind), and the
/// judge is never affected: one worker throughout, and a correct kernel still passes afterwards.
void run_adversarial_triton(const std::string& device) {
  const fs::path dir = kAdversarial / "triton";
  auto manifest = nlohmann::json::parse(read_file(dir / "manifest.json"));
  backends::RunnerClient runner(runner_config(device));
  const auto task = adversarial_task();
  const auto opt = check_only();
  const fs::path work = scratch("adversarial-triton-" + device.substr(0, 4));
  int judged = 0;
  for (const auto& k : manifest["kernels"]) {
    const std::string name = k["name"];
    auto ev =
        backends::evaluate(triton(), read_file(dir / name / "kernel.py"), work / name, runner, task, opt);
    INFO(name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    // Where the inputs are mapped read-only (cpu), a write into one faults before anything else.
    const auto& want = device == "cpu" && k.contains("cpu") ? k["cpu"] : k;
    CHECK(std::string(to_string(ev.outcome)) == want["outcome"].get<std::string>());
    // The scan reports every finding; the rule the manifest names is among them.
    if (want.contains("rule"))
      CHECK(ev.message.find("(" + want["rule"].get<std::string>() + ")") != std::string::npos);
    if (want.contains("sub_kind")) CHECK(ev.sub_kind == want["sub_kind"].get<std::string>());
    ++judged;
  }
  CHECK(judged >= 12);
  auto ev = backends::evaluate(triton(), read_file(dir / "correct" / "kernel.py"), work / "again", runner,
                               task, opt);
  CHECK(ev.outcome == Outcome::pass);
  CHECK(runner.workers_started() == 1);
}

/// The fixture's Triton kernel and imports: the correct candidate's module up to its launcher.
const std::string kHead = [] {
  const std::string correct = read_file(kAdversarial / "triton/correct/kernel.py");
  return correct.substr(0, correct.find("def launch("));
}();

}  // namespace

TEST_CASE("triton: replies are extracted from python fences with a top-level kf_forward", "[triton]") {
  auto ok = triton().extract("text\n```python\nimport torch\ndef kf_forward(x):\n    return x\n```\n");
  REQUIRE(ok.ok);
  CHECK(ok.language == "python");
  auto cpp = triton().extract("```cpp\nextern \"C\" int kf_forward() { return 0; }\n```\n");
  CHECK_FALSE(cpp.ok);
  CHECK(cpp.error == backends::ExtractError::no_code_block);
  auto nested = triton().extract("```python\nclass A:\n    def kf_forward(self):\n        pass\n```\n");
  CHECK_FALSE(nested.ok);
  CHECK(nested.error == backends::ExtractError::no_entry_point);
  CHECK(triton().artifact_kind() == backends::ArtifactKind::python_module);
  CHECK(triton().prompt_language() == "python");
  CHECK(triton().source_file_name() == "kernel.py");
}

TEST_CASE("triton: the build is the static scan; the module is the artifact", "[triton]") {
  const fs::path work = scratch("triton-build");
  backends::CompileOptions o;
  auto ok = backends::compile(triton(), kHead + "def kf_forward(x, y):\n    return x\n", work / "ok", o);
  INFO(ok.summary);
  REQUIRE(ok.ok());
  CHECK(ok.artifact == fs::absolute(work / "ok" / "kernel.py"));
  auto bad =
      backends::compile(triton(), "import subprocess\ndef kf_forward(x):\n    return x\n", work / "bad", o);
  CHECK(bad.status == backends::CompileStatus::forbidden_api);
  REQUIRE_FALSE(bad.forbidden.empty());
  CHECK(bad.forbidden.front().rule == "process");
  auto ev = backends::compile_candidate(triton(), "def kf_forward(x:\n    return x\n", work / "syntax", {});
  CHECK(ev.outcome == Outcome::compile_error);
  CHECK(ev.sub_kind == "syntax");
  CHECK(ev.error_group == "Syntax");
}

TEST_CASE("triton: Python exceptions become outcomes with TritonBench's groups", "[runner]") {
  backends::RunnerClient runner(runner_config("cpu"));
  const auto task = adversarial_task();
  const fs::path work = scratch("triton-errors");
  struct Case {
    std::string name, body, outcome, sub_kind, group;
  };
  const std::vector<Case> cases = {
      {"name_error", "def kf_forward(x, y):\n    out = torch.empty_like(x)\n    return undefined_name\n",
       "compile_error", "undeclared", "Name&Ref"},
      {"zero_division", "def kf_forward(x, y):\n    return x.numel() // 0\n", "runtime_error",
       "python_exception", "Run&Logic"},
      {"import_time", "BLOCK = 1 / 0\n\ndef kf_forward(x, y):\n    return x\n", "runtime_error",
       "python_exception", "Run&Logic"},
      {"wrong_shape", "def kf_forward(x, y):\n    out = torch.empty(3, device=x.device)\n    return out\n",
       "output_mismatch", "shape", ""},
      {"two_outputs", "def kf_forward(x, y):\n    return torch.empty_like(x), torch.empty_like(y)\n",
       "output_mismatch", "shape", ""},
  };
  for (const auto& c : cases) {
    auto ev = backends::evaluate(triton(), kHead + c.body, work / c.name, runner, task, check_only());
    INFO(c.name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << " [" << ev.error_group
                << "]: " << ev.message);
    CHECK(std::string(to_string(ev.outcome)) == c.outcome);
    CHECK(ev.sub_kind == c.sub_kind);
    CHECK(ev.error_group == c.group);
  }
  CHECK(runner.workers_started() == 1);
}

TEST_CASE("triton: --allow-ops lets named ATen ops through the recording", "[runner]") {
  backends::RunnerClient runner(runner_config("cpu"));
  auto task = adversarial_task();
  const std::string relu_in_torch =
      kHead +
      "def kf_forward(x, y):\n    out = torch.empty_like(x)\n    r = torch.relu(x)\n"
      "    n = out.numel()\n    relu2_add_kernel[(triton.cdiv(n, 1024),)](r, y, out, n, BLOCK=1024)\n"
      "    return out\n";
  const fs::path work = scratch("triton-allow-ops");
  auto ev = backends::evaluate(triton(), relu_in_torch, work / "denied", runner, task, check_only());
  INFO(ev.message);
  CHECK(ev.outcome == Outcome::torch_fallback);
  CHECK(ev.message.find("aten.relu") != std::string::npos);
  REQUIRE(ev.check);  // its outputs are compared all the same: right, on every trial
  CHECK(ev.check->correct == std::optional<bool>(true));
  CHECK(ev.check->trials_passed == 0);
  auto wrong =
      backends::evaluate(triton(), "import torch\n\ndef kf_forward(x, y):\n    return torch.relu(x) + y\n",
                         work / "wrong", runner, task, check_only());
  INFO(wrong.message);
  CHECK(wrong.outcome == Outcome::torch_fallback);
  REQUIRE(wrong.check);
  CHECK(wrong.check->correct == std::optional<bool>(false));
  task.allow_ops = {"relu"};
  ev = backends::evaluate(triton(), relu_in_torch, work / "allowed", runner, task, check_only());
  INFO(ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

TEST_CASE("triton: a passing candidate is timed; its returned outputs are copied inside the clock",
          "[runner]") {
  backends::RunnerClient runner(runner_config("cpu"));
  const auto task = adversarial_task();
  const backends::EvalOptions opt = short_bench();
  auto ev = backends::evaluate(triton(), read_file(kAdversarial / "triton/correct/kernel.py"),
                               scratch("triton-bench"), runner, task, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.outcome == Outcome::pass);
  REQUIRE(ev.bench);
  CHECK(ev.bench->ok);
  CHECK(ev.bench->candidate_ms > 0);
  CHECK(ev.bench->speedup > 0);
}

TEST_CASE(
    "triton: allocations shaped like a set's output are handed its memory; a result elsewhere is copied",
    "[runner]") {
  // The host's output slots (backends/host/out_slots.hpp): during each call, the next allocation
  // matching the set's output gets the exchange's memory, natively; the reply says how many did.
  backends::RunnerClient runner(runner_config("cpu"));
  const auto task = adversarial_task();
  const backends::EvalOptions opt = short_bench();
  const std::string launcher =
      kHead +
      "def launch(x, y, out):\n    n = out.numel()\n"
      "    relu2_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n\n\n";
  struct Case {
    const char* name;
    const char* forward;
    bool slotted;  // an allocation took the output's memory
  };
  for (const Case& c : {
           Case{"empty_like",
                "def kf_forward(x, y):\n    out = torch.empty_like(x)\n    launch(x, y, out)\n"
                "    return out\n",
                true},
           // Not the output's shape: nothing is handed over; the result is copied.
           Case{"wider",
                "def kf_forward(x, y):\n    out = torch.empty(x.numel() + 8)\n"
                "    launch(x, y, out[:x.numel()])\n    return out[:x.numel()].view(x.shape)\n",
                false},
           // A scratch buffer of the output's shape takes the slot; the result, elsewhere, is
           // copied over it: still correct.
           Case{"scratch first",
                "def kf_forward(x, y):\n    tmp = torch.empty_like(x)\n    tmp.copy_(y)\n"
                "    out = torch.empty_like(x)\n    launch(x, tmp, out)\n    return out\n",
                true},
       }) {
    auto ev = backends::evaluate(triton(), launcher + c.forward,
                                 scratch(std::string("triton-slots-") + c.name), runner, task, opt);
    INFO(c.name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    REQUIRE(ev.outcome == Outcome::pass);
    REQUIRE(ev.bench);
    REQUIRE(ev.bench->ok);
    const auto& h = ev.bench->host_reported_ms;
    REQUIRE(h.count("slots_taken"));
    if (c.slotted)
      CHECK(h.at("slots_taken") == ev.bench->sets_per_window);
    else
      CHECK(h.at("slots_taken") == 0);
  }
}

TEST_CASE("adversarial triton candidates get their expected outcomes", "[runner]") {
  run_adversarial_triton("cpu");
}

TEST_CASE("adversarial triton candidates get their expected outcomes on the GPU", "[.gpu]") {
  run_adversarial_triton("cuda:0");
}

TEST_CASE("every triton exemplar passes at the default profile on the GPU", "[.gpu]") {
  static Suite s = load_suite(kforge_home() / "benchmarks/suites/kforge-core");
  backends::RunnerClient runner(runner_config("cuda:0"));
  backends::EvalOptions opt;
  opt.bench = false;
  int checked = 0;
  const fs::path work = scratch("exemplars-triton-gpu");
  for (const auto& t : s.tasks) {
    const fs::path k = kforge_home() / "prompts/exemplars/triton" / t.id / "kernel.py";
    if (!fs::exists(k)) continue;
    auto ev = backends::evaluate(triton(), read_file(k), work / t.id, runner, agent::task_ref(t, ""), opt);
    INFO(t.id << ": " << to_string(ev.outcome) << "/" << ev.sub_kind << "\n" << ev.message);
    CHECK(ev.outcome == Outcome::pass);
    ++checked;
  }
  CHECK(checked >= 14);
}

TEST_CASE("triton: a TritonBench-T task is judged on its test block in the confined host", "[runner]") {
  // The fixture checkout's relu_scale: relu(input) * scale, two calls in its test block.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  const Task* t = suite.find("T/relu_scale");
  REQUIRE(t);
  const auto task = agent::task_ref(*t, "");
  REQUIRE(task.test_block());
  CHECK(task.source.find("####") == std::string::npos);  // the implementation only
  const std::string head =
      "import torch\nimport triton\nimport triton.language as tl\n\n"
      "@triton.jit\ndef k(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):\n"
      "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    m = o < n\n"
      "    x = tl.load(x_ptr + o, mask=m)\n    tl.store(y_ptr + o, tl.where(x > 0, x, 0.0) * s, mask=m)\n\n";
  const std::string launch =
      "    y = torch.empty_like(input)\n    k[(triton.cdiv(input.numel(), 128),)](input, y, input.numel(), "
      "SCALE, "
      "BLOCK=128)\n    return y\n";
  auto with_scale = [&](const std::string& scale) {
    std::string body = launch;
    body.replace(body.find("SCALE"), 5, scale);
    return head + "def relu_scale(input, scale=2.0, out=None):\n" + body;
  };
  struct Case {
    std::string name, source, outcome, sub_kind;
  };
  const std::vector<Case> cases = {
      {"correct", with_scale("scale"), "pass", ""},
      {"wrong_scale", with_scale("scale + 1.0"), "output_mismatch", ""},
      {"torch_fallback",
       "import torch\n\ndef relu_scale(input, scale=2.0, out=None):\n    return torch.relu(input) * scale\n",
       "torch_fallback", ""},
      {"wrong_name", "import torch\n\ndef relu_scaled(input, scale=2.0, out=None):\n    return input\n",
       "format_error", "entry_point"},
      {"name_error", head + "def relu_scale(input, scale=2.0, out=None):\n    return undefined_name\n",
       "compile_error", "undeclared"},
      {"wrong_dtype",
       "import torch\n\ndef relu_scale(input, scale=2.0, out=None):\n    return torch.empty(input.shape, "
       "dtype=torch.float64)\n",
       "output_mismatch", "dtype"},
  };
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-t");
  auto opt = check_only();  // timing: "a TritonBench task is timed on its performance inputs"
  for (const auto& c : cases) {
    auto ev = backends::evaluate(triton(), c.source, work / c.name, runner, task, opt);
    INFO(c.name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(std::string(to_string(ev.outcome)) == c.outcome);
    if (!c.sub_kind.empty()) CHECK(ev.sub_kind == c.sub_kind);
    CHECK(!ev.bench);
  }
  CHECK(runner.workers_started() == 1);
}

TEST_CASE("triton: a test block whose gold runs past the reference's deadline lists the task unusable",
          "[runner]") {
  // Issue 38 §3: TritonBench-G chunk_retention_ops's block, run by TritonBench's own script,
  // takes over 200 s of CPU on an H200 host; kforge's client then gave up on the whole check
  // (judge_timeout, the machinery's). The runner now interrupts the gold at its own deadline:
  // the task's failure with the reason, the worker replaced, the next check judged as before.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  const Task* t = suite.find("T/relu_scale");
  REQUIRE(t);
  auto slow = agent::task_ref(*t, "");
  // The gold spins in Python (a busy loop, as an autotuner's compiles keep the interpreter busy)
  // and catches every Exception on the way, as TritonBench's blocks do.
  slow.source +=
      "\nimport time as _kf_time\n_kf_gold = relu_scale\n\n"
      "def relu_scale(*a, **k):\n"
      "    end = _kf_time.monotonic() + 120\n"
      "    while _kf_time.monotonic() < end:\n"
      "        try:\n            sum(range(1000))\n        except Exception:\n            pass\n"
      "    return _kf_gold(*a, **k)\n";
  backends::RunnerConfig rc = runner_config("cpu");
  rc.testblock_reference_timeout = std::chrono::milliseconds(3'000);  // the runner's deadline too
  backends::RunnerClient runner(rc);
  const fs::path work = scratch("triton-testblock-deadline");
  const auto t0 = std::chrono::steady_clock::now();
  auto ev = backends::evaluate(triton(), relu_scale_candidate(), work / "slow", runner, slow, check_only());
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.failure.has_value());
  CHECK(*ev.failure == FailureKind::reference);
  CHECK(ev.message.find("did not finish within 3 s") != std::string::npos);
  CHECK(s.count() < 60);  // interrupted, not run to its end
  // The worker the gold was interrupted in is not used again; the real gold is judged as before.
  auto good = backends::evaluate(triton(), relu_scale_candidate(), work / "good", runner,
                                 agent::task_ref(*t, ""), check_only());
  INFO(to_string(good.outcome) << "/" << good.sub_kind << ": " << good.message);
  CHECK(good.outcome == Outcome::pass);
  CHECK(runner.workers_started() == 2);
}

TEST_CASE("triton: a torch_fallback's results are still compared: correct counts it, pass never does",
          "[runner]") {
  // Issue 22 §3: TritonBench's own figures count correct code of any kind; kforge's pass counts
  // Triton only. A PyTorch candidate stays torch_fallback (no pass, no bench) whatever its
  // results; the judge compares them all the same (the Triton host names the ops without its
  // results, so the judge allows them and runs the seed again) and records `correct`.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  const Task* t = suite.find("T/relu_scale");
  REQUIRE(t);
  const auto task = agent::task_ref(*t, "");
  struct Case {
    std::string name, source;
    bool correct;
  };
  const std::vector<Case> cases = {
      {"torch_right",
       "import torch\n\ndef relu_scale(input, scale=2.0, out=None):\n    return torch.relu(input) * scale\n",
       true},
      {"torch_wrong",
       "import torch\n\ndef relu_scale(input, scale=2.0, out=None):\n    return torch.relu(input) * (scale + "
       "1)\n",
       false},
  };
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-correct");
  auto opt = check_only();
  opt.bench = true;
  agent::TritonBenchTally tally;
  for (const auto& c : cases) {
    auto ev = backends::evaluate(triton(), c.source, work / c.name, runner, task, opt);
    INFO(c.name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(ev.outcome == Outcome::torch_fallback);
    CHECK(!ev.bench);
    REQUIRE(ev.check);
    REQUIRE(ev.check->correct.has_value());
    CHECK(*ev.check->correct == c.correct);
    CHECK(ev.message.find(c.correct ? "correct, but not a pass" : "wrong as well") != std::string::npos);
    AttemptRecord rec;
    agent::fill_record(rec, ev, 0, 0);
    CHECK(rec.outcome == Outcome::torch_fallback);
    CHECK(rec.correct == c.correct);
    CHECK(attempt_from_json(to_json(rec), 1).correct == c.correct);
    tally.add(rec, true);
  }
  // And a Triton candidate that passes: the other side of both figures.
  auto ev = backends::evaluate(triton(), relu_scale_candidate(), work / "triton", runner, task, check_only());
  INFO("triton -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  AttemptRecord rec;
  agent::fill_record(rec, ev, 0, 0);
  CHECK(rec.correct);
  tally.add(rec, true);
  CHECK(tally.judged == 3);
  CHECK(tally.calls == 3);         // every one ran its test block
  CHECK(tally.native_calls == 1);  // one of them in Triton
  CHECK(tally.correct == 2);       // the right PyTorch code counts, as in TritonBench
  CHECK(tally.passes == 1);        // but not as a pass
  INFO(tally.line());
  CHECK(tally.line().find("Call accuracy 100.0% correct / 33.3% pass") != std::string::npos);
  CHECK(tally.line().find("Execution accuracy 66.7% correct / 33.3% pass") != std::string::npos);
  CHECK(runner.workers_started() == 1);
}

TEST_CASE("triton: a TritonBench task is timed on its performance inputs, as TritonBench times it",
          "[runner]") {
  // Issue 22 §4. The fixture checkout's performance_metrics/perf_T/golden_metrics/relu_scale_perf.py
  // (TritonBench's form: three inputs, (x, scale), call_op, GB/s and TFLOPS formulas). Under
  // Triton's interpreter the times mean nothing; the path is the GPU's: each input a bench of its
  // own through the judge's clock, Speed Up = sum of reference ms / sum of candidate ms.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  const Task* t = suite.find("T/relu_scale");
  REQUIRE(t);
  REQUIRE(!t->perf_script.empty());
  const auto task = agent::task_ref(*t, "");
  const std::string candidate = relu_scale_candidate();
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-perf");
  auto opt = check_only();
  opt.bench = true;
  opt.bench_options = short_perf_bench();  // 2 of 3 inputs: the first and the last
  auto ev = backends::evaluate(triton(), candidate, work / "triton", runner, task, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  REQUIRE(ev.outcome == Outcome::pass);
  REQUIRE(ev.bench);
  INFO(ev.bench->message);
  REQUIRE(ev.bench->ok);
  const auto& in = ev.bench->perf_inputs;
  REQUIRE(in.size() == 2);  // sizes 2^8 and 2^10 of 2^8, 2^9, 2^10
  CHECK(in[0].input == 0);
  CHECK(in[1].input == 2);
  CHECK(std::find(ev.bench->flags.begin(), ev.bench->flags.end(),
                  "timed 2 of the script's 3 performance inputs") != ev.bench->flags.end());
  double ref = 0, cand = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    CHECK(in[i].bytes == Approx(double(256 << in[i].input) * 4 * 2));  // the script's get_gbps formula
    CHECK(in[i].flops == Approx(double(256 << in[i].input) * 2));
    CHECK(in[i].candidate_ms > 0);
    CHECK(!in[i].candidate_samples.empty());
    ref += in[i].reference_ms;
    cand += in[i].candidate_ms;
  }
  CHECK(ev.bench->speedup == Approx(ref / cand));
  CHECK(ev.bench->speedup_ci_low <= ev.bench->speedup);
  CHECK(ev.bench->speedup <= ev.bench->speedup_ci_high);
  // The record: Speed Up and the efficiency of the best input against the measured peaks.
  AttemptRecord rec;
  agent::fill_record(rec, ev, 0, 0);
  CHECK(rec.speedup == Approx(ev.bench->speedup));
  DevicePeaks peaks;
  peaks.device = "test";
  peaks.dram_bytes_per_s = 1e9;
  peaks.flops_per_s = 1e9;
  agent::record_tritonbench_roofline(rec, peaks, in);
  CHECK(rec.achieved_gbps > 0);
  CHECK(rec.profile.bottleneck_reason.find("performance input") != std::string::npos);
  agent::TritonBenchTally tally;
  tally.interpreter = true;
  tally.add(rec, true);
  CHECK(tally.timed == 1);
  CHECK(tally.line().find("Speed Up") != std::string::npos);
  CHECK(tally.line().find("not GPU times") != std::string::npos);
  // What only works in TritonBench's tree is gone from the harness; the task's name is the module's.
  const std::string body = backends::perf_script_body(t->perf_script);
  CHECK(body.find("sys.path.append") == std::string::npos);
  CHECK(body.find("TorchBench_v1") == std::string::npos);
  CHECK(body.find("performance_utils") == std::string::npos);
  CHECK(body.find("__main__") == std::string::npos);
  CHECK(body.find("def call_op") != std::string::npos);
  CHECK(backends::chosen_inputs(16, 4) == std::vector<int>{0, 5, 10, 15});
  CHECK(backends::chosen_inputs(3, 0) == std::vector<int>{0, 1, 2});
  CHECK(backends::chosen_inputs(16, 1) == std::vector<int>{15});
  CHECK(backends::tritonbench_speedup({}).speedup == 0);
  CHECK(!backends::perf_script_imports(t->perf_script).empty());
  CHECK(backends::perf_script_imports(t->perf_script).front() == "relu_scale");
}

TEST_CASE("triton: a performance input whose reference fails when loaded again is left untimed, not infra",
          "[runner]") {
  // G/matmul_kernel on an H200 (stop 36): the gold's performance input 0 loaded once, then its
  // illegal memory access surfaced; the bench's load of that input failed on a fresh worker too,
  // and the whole attempt, whose check had passed, was recorded infra_error. Here T/relu_scale's
  // gold fails on input 0 (16 elements) once input 9 (8192) has been run, in any worker (a log
  // file): the loop's loads pass, the bench's load of input 0 (evicted from the worker's 8 tasks,
  // then on the retry's fresh worker) fails. Input 0 is left untimed with the reason; input 9 is
  // timed; the result is the candidate's, never infra_error.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  auto task = agent::task_ref(*suite.find("T/relu_scale"), "");
  const fs::path work = scratch("triton-tritonbench-perf-reference-fails");
  const fs::path log = work / "gold_calls.log";
  const std::string range = "for i in range(8, 11):";
  REQUIRE(task.perf_script.find(range) != std::string::npos);
  task.perf_script.replace(task.perf_script.find(range), range.size(), "for i in range(4, 14):");
  task.source +=
      "\n_kf_gold = relu_scale\n\n"
      "def relu_scale(x, scale):\n"
      "    with open('" +
      log.string() +
      "', 'a+') as f:\n"
      "        f.seek(0)\n"
      "        seen = f.read().split()\n"
      "        f.write('%d\\n' % x.numel())\n"
      "    if x.numel() == 16 and '8192' in seen:\n"
      "        raise RuntimeError('CUDA error: an illegal memory access was encountered')\n"
      "    return _kf_gold(x, scale)\n";
  backends::RunnerClient runner(runner_config("cpu"));
  // 2 of 10 inputs: the first and the last.
  const auto b =
      backends::bench_tritonbench(runner, task, relu_scale_candidate(), work / "bench", short_perf_bench());
  const std::string flags = joined(b.flags);
  INFO(to_string(b.outcome) << "/" << b.sub_kind << ": " << b.message << "\n" << flags);
  REQUIRE(b.ok);
  REQUIRE(b.perf_inputs.size() == 1);
  CHECK(b.perf_inputs[0].input == 9);
  CHECK(b.speedup > 0);
  CHECK(flags.find("performance input 0 not timed: the reference's performance harness failed on it: ") !=
        std::string::npos);
  CHECK(flags.find("illegal memory access") != std::string::npos);
  CHECK(read_file(log).find("8192") != std::string::npos);  // the gold did run input 9 first
}

TEST_CASE("triton: a TritonBench operation that works in place is timed on clones, the same on both sides",
          "[runner]") {
  // Issue 22 §4 (adam_update_triton, bgmv_shrink_kernel, ... on an H100): the fixture checkout
  // tests/data/tritonbench_inplace has G/momentum_step (call_op updates p and buf, returns None) and
  // G/axpy_into (call_op returns the y it writes). The judge's probe finds which leaves each writes
  // or returns; both sides then clone those inside the timed call and return the state they made.
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_inplace");
  const fs::path cands = fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_inplace_candidates";
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-inplace");
  const backends::BenchOptions bo = short_perf_bench();
  struct Case {
    std::string name;
    std::vector<int> cloned, kept;
  };
  for (const Case& c : {Case{"momentum_step", {0, 2}, {0, 2}}, Case{"axpy_into", {1}, {}}}) {
    INFO(c.name);
    const Task* t = suite.find("G/" + c.name);
    REQUIRE(t);
    REQUIRE(!t->perf_script.empty());
    const auto task = agent::task_ref(*t, "");
    // A correct candidate passes its test block and is timed on both inputs, the clones said in
    // the flags (the test block first: it also puts the judge's gold on Triton's interpreter).
    const std::string good = read_file(cands / "good/G" / c.name / "kernel.py");
    auto opt = check_only();
    opt.bench = true;
    opt.bench_options = bo;
    auto ev = backends::evaluate(triton(), good, work / c.name / "good", runner, task, opt);
    INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    REQUIRE(ev.outcome == Outcome::pass);
    REQUIRE(ev.bench);
    std::string flags = joined(ev.bench->flags);
    INFO(flags);
    REQUIRE(ev.bench->ok);
    CHECK(ev.bench->perf_inputs.size() == 2);
    CHECK(ev.bench->speedup > 0);
    CHECK(flags.find("in place: call_op writes or returns its input tensor(s)") != std::string::npos);
    CHECK(flags.find("not timed") == std::string::npos);
    CHECK(ev.message.find("in place: call_op writes or returns") != std::string::npos);  // in the record
    // The judge's detection, on the reference alone.
    const auto probe = runner.load(backends::in_place_probe(task));
    INFO((probe ? "" : probe.failure().message));
    REQUIRE(probe.ok());
    const auto in_place = backends::InPlace::from_code(probe->bytes, probe->flops);
    CHECK(in_place.kind == backends::InPlace::Kind::leaves);
    CHECK(in_place.cloned == c.cloned);
    CHECK(in_place.kept == c.kept);
    // A candidate that does no work returns unchanged clones: never timed, never credited.
    const std::string lazy = read_file(cands / "lazy/G" / c.name / "kernel.py");
    const auto b = backends::bench_tritonbench(runner, task, lazy, work / c.name / "lazy", bo);
    flags = joined(b.flags);
    INFO(flags);
    REQUIRE(b.ok);
    CHECK(b.perf_inputs.empty());
    CHECK(b.speedup == 0);
    CHECK(flags.find("performance input 0 not timed: output_mismatch") != std::string::npos);
  }
  // A candidate that also writes an input the reference does not write (x, not cloned) is caught
  // by the judge's guard of its inputs, as before: never timed.
  {
    const auto task = agent::task_ref(*suite.find("G/axpy_into"), "");
    const std::string scribble = read_file(cands / "scribble/G/axpy_into/kernel.py");
    const auto b = backends::bench_tritonbench(runner, task, scribble, work / "scribble", bo);
    const std::string flags = joined(b.flags);
    INFO(flags);
    REQUIRE(b.ok);
    CHECK(b.perf_inputs.empty());
    // (On the CPU the judge maps inputs read-only, so the write faults; on a GPU, input_modified.)
    CHECK(flags.find("performance input 0 not timed: ") != std::string::npos);
    CHECK((flags.find("input_modified") != std::string::npos ||
           flags.find("mapped read-only") != std::string::npos));
  }
  // An operation that works out of place keeps the plain harness (no clone, as before).
  Suite tb = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench");
  const auto relu = agent::task_ref(*tb.find("T/relu_scale"), "");
  const auto probe = runner.load(backends::in_place_probe(relu));
  REQUIRE(probe.ok());
  CHECK(backends::InPlace::from_code(probe->bytes, probe->flops).kind == backends::InPlace::Kind::none);
  CHECK(backends::perf_module("", relu.perf_script, 0, false).find("_KF_INPLACE = None") !=
        std::string::npos);
  // A call_op that returns nothing and writes nothing leaves nothing to verify: not timed (a
  // candidate doing no work would otherwise be timed as equal).
  auto discarding = relu;
  const std::string ret = "return relu_scale(x, scale)";
  REQUIRE(discarding.perf_script.find(ret) != std::string::npos);
  discarding.perf_script.replace(discarding.perf_script.find(ret), ret.size(), "relu_scale(x, scale)");
  const auto b = backends::bench_tritonbench(runner, discarding, "def relu_scale(x, scale):\n    return x\n",
                                             work / "discarding", bo);
  REQUIRE(b.ok);
  CHECK(b.perf_inputs.empty());
  REQUIRE(!b.flags.empty());
  CHECK(b.flags.front().find("not timed: call_op returns no tensor and writes none of its inputs") == 0);
  CHECK(backends::InPlace::from_code(-2, 0).kind == backends::InPlace::Kind::nothing);
  CHECK(backends::InPlace::from_code(-1, -1).kind == backends::InPlace::Kind::all);
  CHECK(backends::InPlace::from_code(5, 4).python() == "((0, 2, ), (2, ))");
}

TEST_CASE(
    "triton: a KernelBench ModelNew candidate is built with get_init_inputs() and the reference's state",
    "[runner]") {
  // normalization/layer_norm: Model(dim, eps) with weight and bias. The judge's trials include
  // one with the parameters perturbed: ModelNew passes it only if its state is the judge's own.
  Suite suite = load_suite(kforge_home() / "benchmarks/suites/kforge-core");
  const auto task = agent::task_ref(*suite.find("normalization/layer_norm"), "ci");
  std::string kernel =
      read_file(kforge_home() / "prompts/exemplars/triton/normalization/layer_norm/kernel.py");
  kernel = kernel.substr(0, kernel.find("def kf_forward("));
  const std::string model_new =
      "import torch.nn as nn\n\n"
      "class ModelNew(nn.Module):\n"
      "    def __init__(self, dim, eps):\n"
      "        super().__init__()\n"
      "        self.eps = eps\n"
      "        self.weight = nn.Parameter(torch.ones(dim))\n"
      "        self.bias = nn.Parameter(torch.zeros(dim))\n"
      "    def forward(self, x):\n"
      "        x = x.contiguous()\n"
      "        dim = x.shape[-1]\n"
      "        y = torch.empty_like(x)\n"
      "        layer_norm_kernel[(x.numel() // dim,)](x, self.weight, self.bias, y, dim, self.eps,\n"
      "                                              BLOCK=triton.next_power_of_2(dim))\n"
      "        return y\n";
  std::string extra = model_new;
  extra.replace(extra.find("        self.bias ="), 0, "        self.scale = nn.Parameter(torch.ones(1))\n");
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-model-new");
  auto opt = check_only();
  opt.trials = 1;
  auto ev = backends::evaluate(triton(), kernel + model_new, work / "model_new", runner, task, opt);
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  REQUIRE(ev.check);
  CHECK(std::any_of(ev.check->checks.begin(), ev.check->checks.end(),
                    [](const std::string& c) { return c.find("perturbed") != std::string::npos; }));
  auto bad = backends::evaluate(triton(), kernel + extra, work / "extra_state", runner, task, opt);
  INFO(to_string(bad.outcome) << "/" << bad.sub_kind << ": " << bad.message);
  CHECK(bad.outcome == Outcome::format_error);
  CHECK(bad.sub_kind == "entry_point");
  CHECK(bad.message.find("scale") != std::string::npos);
}

TEST_CASE("triton: a test block's nested indentation reaches the Triton host as written", "[runner]") {
  // The `testsrc` line carries the block as JSON; splitting it into words would fold every
  // indentation level into one space, and the candidate's side would fail where the reference's
  // did not (a failure of kforge's, charged to the model).
  const fs::path root = scratch("triton-tritonbench-nested");
  fs::create_directories(root / "data/TritonBench_T_v1");
  write_file(root / "data/TritonBench_T_v1/nested_scale.py",
             "import torch\n\ndef nested_scale(input, scale=2.0):\n    return torch.relu(input) * scale\n\n" +
                 tritonbench_separator() +
                 "\n\nimport torch\n\ndef test_nested_scale():\n    results = {}\n"
                 "    for i in range(2):\n        if i % 2 == 0:\n"
                 "            results['case_%d' % i] = nested_scale(torch.randn(8, device='cuda'))\n"
                 "        else:\n            results['case_%d' % i] = nested_scale(torch.randn(5, "
                 "device='cuda'), 0.5)\n"
                 "    return results\n\ntest_results = test_nested_scale()\n");
  Suite suite = load_suite(root);
  const Task* t = suite.find("T/nested_scale");
  REQUIRE(t);
  const std::string candidate =
      "import torch\nimport triton\nimport triton.language as tl\n\n"
      "@triton.jit\ndef k(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):\n"
      "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    m = o < n\n"
      "    x = tl.load(x_ptr + o, mask=m)\n    tl.store(y_ptr + o, tl.where(x > 0, x, 0.0) * s, mask=m)\n\n"
      "def nested_scale(input, scale=2.0):\n    y = torch.empty_like(input)\n"
      "    k[(triton.cdiv(input.numel(), 128),)](input, y, input.numel(), scale, BLOCK=128)\n    return y\n";
  backends::RunnerClient runner(runner_config("cpu"));
  auto ev =
      backends::evaluate(triton(), candidate, root / "work", runner, agent::task_ref(*t, ""), check_only());
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
}

namespace {
/// A TritonBench checkout of one G task under `root`: data/TritonBench_G_v1/<name>.py holding
/// `file_text`, listed in TritonBench_G_v1.json; the task as the suite loader reads it.
backends::TaskRef one_g_task(const fs::path& root, const std::string& name, const std::string& file_text) {
  write_file(root / "data/TritonBench_G_v1" / (name + ".py"), file_text);
  write_file(root / "data/TritonBench_G_v1.json", R"([{"file": ")" + name + R"(.py", "difficulty": "2"}])");
  Suite suite = load_suite(root);
  const Task* t = suite.find("G/" + name);
  REQUIRE(t);
  auto task = agent::task_ref(*t, "");
  REQUIRE(task.test_block());
  return task;
}
}  // namespace

TEST_CASE("triton: a TritonBench-G candidate may run the PyTorch ops the gold reference runs", "[runner]") {
  // A G task's reference is Triton that mixes in PyTorch (here the scale: x.abs().max()); the
  // judge records the ops the reference's entry points run and lets the candidate run them. Any
  // other compute op is still a torch_fallback.
  const fs::path root = scratch("triton-tritonbench-g") / "checkout";
  const std::string gold =
      "import torch\nimport triton\nimport triton.language as tl\n\n"
      "@triton.jit\ndef _scaled_add(x_ptr, y_ptr, o_ptr, n, inv, BLOCK: tl.constexpr):\n"
      "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    m = offs < n\n"
      "    x = tl.load(x_ptr + offs, mask=m)\n    y = tl.load(y_ptr + offs, mask=m)\n"
      "    tl.store(o_ptr + offs, x * inv + y, mask=m)\n\n"
      "def scaled_add(x, y):\n"
      "    inv = 1.0 / x.abs().max().item()\n"
      "    out = torch.empty_like(x)\n"
      "    _scaled_add[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), inv, BLOCK=128)\n"
      "    return out\n";
  const std::string test =
      "\n" + std::string(146, '#') +
      "\n\ndef test_scaled_add():\n    x = torch.randn(300, device='cuda')\n"
      "    y = torch.randn(300, device='cuda')\n    return {'case_1': scaled_add(x, y)}\n\n"
      "result_gold = test_scaled_add()\n";
  const auto task = one_g_task(root, "scaled_add", gold + test);
  std::string extra_op = gold;
  extra_op.replace(extra_op.find("    return out\n"), 15, "    return out + torch.exp(x) * 0\n");
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-g-work");
  auto opt = check_only();
  auto ev = backends::evaluate(triton(), gold, work / "gold", runner, task, opt);
  INFO("gold -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  auto bad = backends::evaluate(triton(), extra_op, work / "extra_op", runner, task, opt);
  INFO("extra op -> " << to_string(bad.outcome) << "/" << bad.sub_kind << ": " << bad.message);
  CHECK(bad.outcome == Outcome::torch_fallback);
  CHECK(bad.message.find("exp") != std::string::npos);
  // Gold agreement costs a second run of the gold once: it agreed with itself on every element,
  // so the next check on this worker runs it once per seed.
  REQUIRE(ev.check);
  REQUIRE(bad.check);
  REQUIRE(!ev.check->checks.empty());
  REQUIRE(!bad.check->checks.empty());
  CHECK(ev.check->checks.front().find("run twice under each seed") != std::string::npos);
  CHECK(bad.check->checks.front().find("run once under each seed") != std::string::npos);
}

TEST_CASE("triton: a test block that calls backward is counted op for op on both sides", "[runner]") {
  // G/log_softmax and G/layer_norm_triton call backward in their test blocks: the autograd
  // engine's scopes are not ops (their ops count one by one), the gold's own Triton backward
  // passes, and a candidate whose backward is PyTorch is a torch_fallback at the block's line.
  const fs::path root = scratch("triton-tritonbench-backward") / "checkout";
  const std::string head =
      "import torch\nimport triton\nimport triton.language as tl\n\n"
      "@triton.jit\ndef _twice(x_ptr, o_ptr, n, BLOCK: tl.constexpr):\n"
      "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
      "    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)\n\n"
      "def _run(x):\n    out = torch.empty_like(x)\n"
      "    _twice[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)\n    return out\n\n"
      "class Twice(torch.autograd.Function):\n"
      "    @staticmethod\n    def forward(ctx, x):\n        return _run(x)\n\n"
      "    @staticmethod\n    def backward(ctx, g):\n        return BACKWARD\n\n"
      "def twice(x):\n    return Twice.apply(x)\n";
  auto with_backward = [&](const std::string& b) {
    std::string s = head;
    s.replace(s.find("BACKWARD"), 8, b);
    return s;
  };
  const std::string test =
      "\n" + std::string(146, '#') +
      "\n\ndef test_twice():\n    x = torch.randn(300, device='cuda', requires_grad=True)\n"
      "    y = twice(x)\n    y.sum().backward()\n    return {'y': y, 'grad': x.grad}\n\n"
      "result_gold = test_twice()\n";
  const std::string gold = with_backward("_run(g.contiguous())");
  const auto task = one_g_task(root, "twice", gold + test);
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-backward-work");
  auto ev = backends::evaluate(triton(), gold, work / "gold", runner, task, check_only());
  INFO("gold -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::pass);
  auto torch_bw = backends::evaluate(triton(), with_backward("g * 2.0"), work / "torch_backward", runner,
                                     task, check_only());
  INFO("torch backward -> " << to_string(torch_bw.outcome) << "/" << torch_bw.sub_kind << ": "
                            << torch_bw.message);
  CHECK(torch_bw.outcome == Outcome::torch_fallback);
  CHECK(torch_bw.message.find("aten.mul") != std::string::npos);
  REQUIRE(torch_bw.check);
  CHECK(torch_bw.check->correct.value_or(false));
}

TEST_CASE("triton: a test block's int8 results may hold the poison byte; subnormals may flush to zero",
          "[runner]") {
  // TritonBench-G's quantize_global writes int8 codes, some of them 90 (0x5A, the int8 poison):
  // a written 90 is not "never written". Its mul_exponent_compensator expects 1.4e-45, which a
  // GPU that flushes subnormals writes as 0: below float32's smallest normal a difference is
  // not an error.
  const fs::path root = scratch("triton-tritonbench-poison") / "checkout";
  const std::string gold =
      "import torch\nimport triton\nimport triton.language as tl\n\n"
      "@triton.jit\ndef _codes(o_ptr, n, BLOCK: tl.constexpr):\n"
      "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
      "    tl.store(o_ptr + offs, (offs % 100).to(tl.int8), mask=offs < n)\n\n"
      "@triton.jit\ndef _tiny(x_ptr, o_ptr, n, BLOCK: tl.constexpr):\n"
      "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
      "    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)\n\n"
      "def codes_and_tiny(x):\n"
      "    codes = torch.empty(300, dtype=torch.int8, device=x.device)\n"
      "    _codes[(3,)](codes, 300, BLOCK=128)\n"
      "    tiny = torch.empty_like(x)\n"
      "    _tiny[(1,)](x, tiny, x.numel(), BLOCK=128)\n"
      "    return codes, tiny\n";
  const std::string test = "\n" + std::string(146, '#') +
                           "\n\ndef test_it():\n    x = torch.ones(4, device='cuda')\n"
                           "    return codes_and_tiny(x)\n\nresult_gold = test_it()\n";
  auto with_scale = [&](const std::string& v) {
    std::string s = gold;
    s.replace(s.find("SCALE"), 5, v);
    return s;
  };
  const auto task = one_g_task(root, "codes_and_tiny", with_scale("1e-44") + test);
  backends::RunnerClient runner(runner_config("cpu"));
  const fs::path work = scratch("triton-tritonbench-poison-work");
  auto opt = check_only();
  for (const auto& [name, scale, pass] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"gold", "1e-44", true}, {"flushed", "0.0", true}, {"wrong", "1e-3", false}}) {
    auto ev = backends::evaluate(triton(), with_scale(scale), work / name, runner, task, opt);
    INFO(name << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK((ev.outcome == Outcome::pass) == pass);
    if (!pass) CHECK(ev.outcome == Outcome::output_mismatch);
  }
}

namespace {

/// Gold agreement (issue 22 §2): tests/data/tritonbench_golddet's tail_written leaves the first
/// third of its torch.empty result unwritten (as G/attn_fwd_causal does). The judge runs the
/// gold twice per seed with its uninitialised memory poisoned differently, and compares a
/// candidate only where the two runs agree; the mask is the gold's alone.
void judge_tail_written(const std::string& device) {
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_golddet");
  const Task* t = suite.find("G/tail_written");
  REQUIRE(t);
  const auto task = agent::task_ref(*t, "");
  const fs::path kernels = fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_golddet_candidates";
  backends::RunnerClient runner(runner_config(device));
  const fs::path work = scratch("triton-tritonbench-golddet-" + device.substr(0, 4));
  auto judge_set = [&](const std::string& set) {
    auto ev = backends::evaluate(triton(), read_file(kernels / set / "G/tail_written/kernel.py"), work / set,
                                 runner, task, check_only());
    INFO(set << " -> " << to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    return ev;
  };
  // The gold itself passes, and the record says the comparison was restricted.
  auto gold = judge_set("gold");
  CHECK(gold.outcome == Outcome::pass);
  CHECK(gold.message.find("result 0 compared on 256 of 384 elements") != std::string::npos);
  CHECK(gold.message.find("result 1 compared on 300 of 450 elements") != std::string::npos);
  REQUIRE(gold.check);
  REQUIRE(!gold.check->checks.empty());
  CHECK(gold.check->checks.front().find("run twice under each seed") != std::string::npos);
  // A candidate that writes every element passes too; the gold still runs twice per seed (it
  // needed a mask before).
  auto full = judge_set("full");
  CHECK(full.outcome == Outcome::pass);
  REQUIRE(full.check);
  REQUIRE(!full.check->checks.empty());
  CHECK(full.check->checks.front().find("run twice under each seed") != std::string::npos);
  // Wrong in one written element: a mismatch at its index in the whole result (128 + 7).
  auto wrong = judge_set("wrong");
  CHECK(wrong.outcome == Outcome::output_mismatch);
  CHECK(wrong.message.find("1 of 256 elements") != std::string::npos);
  CHECK(wrong.message.find("worst at [135]") != std::string::npos);
  CHECK(wrong.message.find("compared on 256 of 384 elements") != std::string::npos);
  // Cannot fool the judge: nothing written, or the gold's values moved to where the gold writes
  // nothing and garbage where it does, are mismatches.
  for (const std::string set : {"unwritten", "garbage"}) {
    auto ev = judge_set(set);
    CHECK(ev.outcome == Outcome::output_mismatch);
  }
  CHECK(runner.workers_started() == 1);
}

}  // namespace

TEST_CASE("triton: a TritonBench-G gold that leaves memory unwritten is compared where it writes",
          "[runner]") {
  judge_tail_written("cpu");
}

TEST_CASE("triton: a TritonBench-G gold that leaves memory unwritten is compared where it writes, on the GPU",
          "[.gpu]") {
  // On CUDA the caching allocator hands torch.empty a freed block, whatever it held.
  judge_tail_written("cuda:0");
}

namespace {

/// random_gold draws torch.rand noise from a generator seeded by the clock, which
/// torch.manual_seed does not govern: the gold's two runs under one seed disagree everywhere.
void judge_random_gold(const std::string& device) {
  Suite suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_golddet");
  const Task* t = suite.find("G/random_gold");
  REQUIRE(t);
  const auto task = agent::task_ref(*t, "");
  backends::RunnerClient runner(runner_config(device));
  const fs::path kernel =
      fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_golddet_candidates/gold/G/random_gold/kernel.py";
  auto ev = backends::evaluate(triton(), read_file(kernel),
                               scratch("triton-tritonbench-golddet-random-" + device.substr(0, 4)), runner,
                               task, check_only());
  INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
  CHECK(ev.outcome == Outcome::infra_error);
  CHECK(ev.sub_kind == "unjudgeable");
  CHECK(ev.message.rfind("unjudgeable: ", 0) == 0);
  CHECK(ev.message.find("result 0 (leaf 0): ") != std::string::npos);
  CHECK(ev.message.find("% of its 300 elements differ between two runs of the gold") != std::string::npos);
  CHECK(runner.unusable().count("G/random_gold") == 1);
  CHECK(runner.unusable_detail(task).rfind("unjudgeable: ", 0) == 0);
}

}  // namespace

TEST_CASE("triton: a TritonBench-G gold whose two runs disagree is unjudgeable, never the candidate's fault",
          "[runner]") {
  judge_random_gold("cpu");
}

TEST_CASE("triton: a TritonBench-G gold whose two runs disagree is unjudgeable, on the GPU", "[.gpu]") {
  judge_random_gold("cuda:0");
}

TEST_CASE("triton: tiny calls cannot run ahead of the judge's clock while other runners use the GPU",
          "[.gpu][tiny]") {
  // tests/data/adversarial_tiny: relu of 4096 floats, one launch a call on each side. Three
  // other runners check candidates on the same GPU meanwhile (their hosts' start-up, CUDA
  // contexts and kernels), as under `eval --devices cuda:0,cuda:0,...`; their checks wait for the
  // bench's timed work and the bench for their checks (timed_lock.hpp). Were the candidate's
  // calls scheduled before the judge's lead-in spin, or a preemption of the spin missed, they
  // would fall outside the timed interval and read far below a launch's floor: a reading below
  // half the judge's launch floor must be a launch_floor timing_anomaly, and a credited one is
  // at most 1.6x. (On an H200, while other runners' checks could still run inside timed windows,
  // honest readings ran from 0 to 17 us a call; with shared holds they read 4.5-6.0 us, the
  // Triton host's launches from Python, against the reference's 1.77 us.)
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/adversarial_tiny";
  auto parsed = parse_task_file(dir / "task.py", "adversarial/tiny_relu");
  REQUIRE(parsed.task);
  const auto task = agent::task_ref(*parsed.task, "");
  std::atomic<bool> stop{false};
  std::atomic<int> busy_checks{0};
  std::vector<std::thread> busy;
  for (int i = 0; i < 3; ++i)
    busy.emplace_back([&, i] {
      backends::RunnerClient other(runner_config("cuda:0"));
      const fs::path work = scratch("tiny-busy-" + std::to_string(i));
      for (int n = 0; !stop; ++n) {
        backends::evaluate(triton(), read_file(kAdversarial / "triton/correct/kernel.py"),
                           work / std::to_string(n), other, adversarial_task(), check_only());
        ++busy_checks;
      }
    });
  backends::RunnerClient runner(runner_config("cuda:0"));
  backends::EvalOptions opt;
  opt.bench = true;
  const fs::path work = scratch("tiny-calls");
  for (int round = 0; round < 3; ++round) {
    auto ev = backends::evaluate(triton(), read_file(dir / "kernel.py"), work / std::to_string(round), runner,
                                 task, opt);
    INFO(to_string(ev.outcome) << "/" << ev.sub_kind << ": " << ev.message);
    CHECK(ev.outcome == Outcome::pass);
    if (!ev.bench) continue;
    const auto& b = *ev.bench;
    std::printf(
        "[tiny calls] round %d: speedup %.3f (candidate %.2f us, reference %.2f us a call; "
        "%d sets a window, lead-in %.3f ms, %d batches dropped as preempted, largest gap %.1f us; "
        "%d checks by the other runners so far; launch floor %.2f us%s%s)\n",
        round, b.speedup, b.candidate_ms * 1e3, b.reference_ms * 1e3, b.sets_per_window, b.lead_in_length_ms,
        b.lead_in_preempted, b.lead_in_max_gap_us, busy_checks.load(), b.launch_floor_ms * 1e3,
        b.timing_anomaly.empty() ? "" : "; timing_anomaly: ", b.timing_anomaly.c_str());
    // The judge measured its launch floor; what reads below half of it is never credited, and
    // what is credited is near the reference's own launch.
    CHECK(b.launch_floor_ms > 0);
    if (b.candidate_ms < 0.5 * b.launch_floor_ms) CHECK(b.timing_anomaly_kind == "launch_floor");
    // The other runners' checks never run inside a timed window (timed_lock.hpp's shared holds):
    // the reference's one launch a call reads near the floor. On an H200, before checks held the
    // lock shared, it read 24-29 us a call against a floor of 1.43 us; with them, 1.77 us.
    CHECK(b.reference_ms < 4 * b.launch_floor_ms);
    if (b.timing_anomaly.empty()) CHECK(b.speedup <= 1.6);
  }
  stop = true;
  for (auto& t : busy) t.join();
  CHECK(busy_checks > 0);  // the GPU was shared while the candidate was timed
}
