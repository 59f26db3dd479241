// [prompts] issue 11 §3, issue 39 §6: the rendered prompts (turn 1, repair after a compile error,
// repair after a mismatch, optimise after a pass; cpu, cuda and triton) against the golden files
// under tests/data/golden/prompts/<backend>_<situation>.md, with fixed fake hardware facts, and
// the prompt defects that must stay fixed. Regenerate the golden files after an intended
// template change with:  KFORGE_UPDATE_GOLDEN=1 build/tests/kforge_tests "[golden]"   (then
// review the diff: it is the change every model will see).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "catch.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/prompt_context.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/retrieval/retrieval.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

prompts::HardwareFacts fake_facts(const std::string& backend) {
  prompts::HardwareFacts f;
  f.kind = backend;
  if (backend == "cuda") {
    f.name = "NVIDIA H100 80GB HBM3";
    f.compute_capability = "9.0";
    f.sm_count = 132;
    f.memory_gib = 79.6;
    f.spec_bandwidth_gbps = 3350;
    f.l2_kib = 50 * 1024;
    f.measured_dram_gbps = 2980;
    f.measured_fp32_tflops = 51.2;
    f.compiler = "nvcc -O3 -std=c++17";
  } else {
    f.name = "AMD EPYC 9454 48-Core Processor";
    f.cores = 48;
    f.threads = 96;
    f.omp_threads = 96;
    f.simd = "AVX-512";
    f.simd_bits = 512;
    f.compiler = "g++ -O3 -march=native -fopenmp -std=c++17";
  }
  return f;
}

const char* kRepairDetail =
    R"(kernel.cu:14:5: error: no matching function for call to 'gelu(const float*, float*)'
  14 | gelu(x, y);
    kernel.cu:6:17: note: candidate: 'void gelu(const float*, float*, int64_t)'
    kernel.cu:6:17: note:   candidate expects 3 arguments, 2 provided)";

const char* kMismatchDetail =
    "trial 7 of 7 (wider inputs): seed 1006, scaled-normal inputs (scale 3), output 'out': 1432 of 16448 "
    "elements (8.7%) differ beyond atol 0.0001 + rtol 0.0001 * |expected|; worst at [12, 40]: expected "
    "-0.0455, got -0.0397 (abs err 0.0058)";

prompts::PromptInput golden_input(const std::string& backend, const std::string& situation) {
  const fs::path task_file = kforge_home() / "benchmarks/suites/kforge-core/activation/gelu_tanh.py";
  const bool gpu = backend != "cpu";
  prompts::PromptInput in;
  in.backend = backend;
  if (backend == "triton") {
    in.language = "python";
    in.device_type = "cuda";
  } else if (backend == "cuda") {
    in.language = "cuda";
    in.device_type = "cuda";
  }
  in.task_id = "activation/gelu_tanh";
  in.category = "activation";
  in.reference = read_file(task_file);
  in.device = gpu ? "cuda:0" : "cpu";
  in.hardware = fake_facts(gpu ? "cuda" : "cpu");
  in.max_tokens = 4096;
  in.tensors = {{"input", "x", "input", "float32", {64, 257}},
                {"output", "out", "output", "float32", {64, 257}}};
  retrieval::ExemplarStore store(kforge_home() / "prompts/exemplars" / backend,
                                 [](const std::string&) { return std::string(); });
  in.exemplars = store.select(retrieval::Strategy::add, in.task_id, in.category, in.reference);
  const std::string src =
      backend == "cuda"     ? "__global__ void gelu(const float* x, float* y, int64_t n);\n// ..."
      : backend == "triton" ? "@triton.jit\ndef gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    ..."
                            : "static void gelu(const float* x, float* y, int64_t n);\n// ...";
  if (situation == "repair") {
    prompts::PastAttempt a;
    a.turn = 1;
    a.source = src;
    a.outcome = Outcome::compile_error;
    a.sub_kind = "type_mismatch";
    a.detail = kRepairDetail;
    if (backend == "cpu") a.detail = std::regex_replace(a.detail, std::regex("kernel\\.cu"), "kernel.cpp");
    if (backend == "triton") {
      a.sub_kind = "triton_compile";
      a.detail = "kernel.py:3: CompilationError: at 3:4: NameError('BLOCK_SIZE is not defined')";
    }
    in.history = {a};
  } else if (situation == "mismatch") {
    prompts::PastAttempt a;
    a.turn = 1;
    a.source = src;
    a.outcome = Outcome::output_mismatch;
    a.sub_kind = "tolerance";
    a.detail = kMismatchDetail;
    in.history = {a};
  } else if (situation == "optimise") {
    const bool cuda = gpu;
    prompts::PastAttempt first;
    first.turn = 1;
    first.source = src;
    first.outcome = Outcome::pass;
    first.speedup = 1.10;
    first.t_candidate_ms = cuda ? 0.0568 : 1.049;
    first.findings = {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "uncoalesced global access", 16.0,
                       "sectors/request", "uncoalesced global loads: 16.0 sectors per request", 0.8}};
    prompts::PastAttempt a;
    a.turn = 2;
    a.source = src;
    a.outcome = Outcome::pass;
    a.speedup = 1.37;
    a.achieved_gbps = cuda ? 1450.0 : 38.5;
    a.achieved_tflops = cuda ? 1.81 : 0.05;
    a.t_candidate_ms = cuda ? 0.0456 : 0.842;
    a.t_candidate_p10_ms = cuda ? 0.0449 : 0.830;
    a.t_candidate_p90_ms = cuda ? 0.0471 : 0.871;
    a.t_reference_ms = a.t_candidate_ms * 1.37;
    a.t_reference_p10_ms = a.t_reference_ms * 0.98;
    a.t_reference_p90_ms = a.t_reference_ms * 1.03;
    a.speedup_ci_low = 1.33;
    a.speedup_ci_high = 1.41;
    if (cuda) {
      a.peak_gbps = 2980;
      a.peak_tflops = 51.2;
      a.bottleneck = "memory-bound";
      a.bottleneck_reason = "DRAM at 49% of measured peak (1450 of 2980 GB/s)";
      a.findings = {
          {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "uncoalesced global access", 8.5,
           "sectors/request", "uncoalesced global loads: 8.5 sectors per request (4 is ideal)", 0.7},
          {"sm__warps_active.avg.pct_of_peak_sustained_active", "low occupancy", 24.0, "%",
           "low occupancy: 24% of warp slots active (limited by registers)", 0.6}};
      a.candidate_kernels = {{"gelu_kernel(const float *, float *, long)", 0.0441, 1}};
      a.reference_kernels = {
          {"void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>(int, T2, T3)", 0.0601, 1}};
      a.resources =
          "gelu_kernel: 40 registers/thread, 0 B stack, spills 0 B stores / 0 B loads, 0 B static shared "
          "memory\n";
    } else {
      a.bottleneck = "latency-bound";
      a.profiler_note = "cpu backend: timing and roofline only";
    }
    in.history = {first, a};
  }
  return in;
}

}  // namespace

TEST_CASE("golden prompts: every backend and turn kind, byte for byte", "[prompts][golden]") {
  const bool update = std::getenv("KFORGE_UPDATE_GOLDEN") != nullptr;
  const fs::path dir = fs::path(KFORGE_TESTS_DIR) / "data/golden/prompts";
  for (const std::string backend : {"cuda", "cpu", "triton"}) {
    for (const std::string situation : {"turn1", "repair", "mismatch", "optimise"}) {
      const std::string got = prompts::render_prompt(golden_input(backend, situation)).markdown();
      const fs::path file = dir / (backend + "_" + situation + ".md");
      INFO(file.string() << " (regenerate: KFORGE_UPDATE_GOLDEN=1 build/tests/kforge_tests \"[golden]\")");
      if (update) {
        fs::create_directories(dir);
        write_file(file, got);
      }
      REQUIRE(fs::exists(file));
      CHECK(read_file(file) == got);
      CHECK(got.find("{{") == std::string::npos);
    }
  }
}

TEST_CASE("prompt defects of issue 11 stay fixed", "[prompts]") {
  for (const std::string backend : {"cuda", "cpu"}) {
    INFO(backend);
    const auto turn1 = prompts::render_prompt(golden_input(backend, "turn1"));
    const auto repair = prompts::render_prompt(golden_input(backend, "repair"));
    const auto optimise = prompts::render_prompt(golden_input(backend, "optimise"));
    // The exemplar's Reference: block holds the exemplar's task source.
    auto ref_at = turn1.user.find("## Example: task `add`");
    REQUIRE(ref_at != std::string::npos);
    auto fence = turn1.user.find("```python\n", ref_at);
    REQUIRE(fence != std::string::npos);
    CHECK(turn1.user.compare(fence + 10, 12, "import torch") == 0);
    // The device is named with its facts, never "cuda:0" / "the host CPU".
    CHECK(turn1.user.find("cuda:0") == std::string::npos);
    CHECK(turn1.system.find("the host CPU") == std::string::npos);
    if (backend == "cuda") {
      CHECK_THAT(turn1.system, Catch::Contains("NVIDIA H100 80GB HBM3 (132 SMs, compute capability 9.0)"));
      CHECK_THAT(turn1.user, Catch::Contains("measured DRAM bandwidth (fills and copies): 2980 GB/s"));
      CHECK_THAT(turn1.user, Catch::Contains("-arch=sm_90"));
    } else {
      CHECK_THAT(turn1.system, Catch::Contains("runs with 96 OpenMP threads"));
      CHECK_THAT(turn1.system, Catch::Contains("-fopenmp"));
      CHECK(turn1.system.find("OpenMP-free") == std::string::npos);
      CHECK_THAT(turn1.user, Catch::Contains("AVX-512 (512-bit vectors, 16 floats)"));
    }
    // The ABI is stated, so --exemplar none works.
    for (const char* s : {"void* data;", "int32_t dtype;", "int32_t ndim;", "int64_t sizes[KF_MAX_DIMS];",
                          "int64_t strides[KF_MAX_DIMS];", "int32_t device;", "KF_BFLOAT16 = 2", "kf_numel"})
      CHECK_THAT(turn1.user, Catch::Contains(s));
    // The tolerance per output dtype.
    CHECK_THAT(turn1.user, Catch::Contains("- float32 outputs: atol 0.0001, rtol 0.0001"));
    // One closing instruction per situation.
    CHECK(turn1.user.find("Previous attempts") == std::string::npos);
    CHECK_THAT(repair.user, Catch::Contains("fixing the problem reported above"));
    CHECK(optimise.user.find("fixing the problem") == std::string::npos);
    CHECK_THAT(optimise.user, Catch::Contains("Write a faster kernel"));
    // Notes attached to their error reach the prompt.
    CHECK_THAT(repair.user, Catch::Contains("note:   candidate expects 3 arguments, 2 provided"));
    for (const auto* p : {&turn1, &repair, &optimise}) CHECK(p->markdown().find("{{") == std::string::npos);
  }
}

TEST_CASE("pass feedback: times, CI, rates against peaks, bottleneck, metrics vs best, resources",
          "[prompts]") {
  const auto p = prompts::render_prompt(golden_input("cuda", "optimise")).user;
  CHECK_THAT(p, Catch::Contains(
                    "- time: 45.6 us (p10 44.9, p90 47.1) vs PyTorch eager 62.5 us (p10 61.2, p90 64.3): "
                    "speedup 1.37x (95% CI 1.33-1.41x)"));
  CHECK_THAT(p, Catch::Contains(
                    "1450.00 GB/s (49% of the measured 2980 GB/s), 1.81 TFLOP/s (4% of the measured 51.2)"));
  CHECK_THAT(p, Catch::Contains("- bottleneck: memory-bound (DRAM at 49%"));
  CHECK_THAT(p, Catch::Contains("(this attempt; best so far: turn 1, 1.10x)"));
  CHECK_THAT(p, Catch::Contains("uncoalesced global access: 8.5 sectors/request (best 16.0 sectors/request, "
                                "change -7.5 sectors/request)"));
  CHECK_THAT(p, Catch::Contains("low occupancy: 24.0% (not among the best attempt's findings)"));
  CHECK_THAT(p, Catch::Contains("- compile resources: gelu_kernel: 40 registers/thread"));
  CHECK_THAT(p, Catch::Contains("- kernels of one call (Nsight Compute): gelu_kernel 44.1 us\n"));
  CHECK_THAT(p, Catch::Contains("- PyTorch's kernels for the reference: void at::native::vector"));
  CHECK_THAT(p, Catch::Contains("elementwise_...luCUDAKernelImpl> 60.1 us\n"));  // both ends kept
  CHECK(p.find("## Your attempt at turn 1") == std::string::npos);               // policy last

  // --history all: one summary line per earlier turn, the last attempt in full.
  auto in = golden_input("cuda", "optimise");
  prompts::PastAttempt broken;
  broken.turn = 1;
  broken.outcome = Outcome::compile_error;
  broken.sub_kind = "syntax";
  broken.detail = "kernel.cu:3:1: error: expected ';'\nZZSECONDLINE";
  in.history.insert(in.history.begin(), broken);
  in.history[1].turn = 2;
  in.history[2].turn = 3;
  in.policy = prompts::HistoryPolicy::all;
  const auto all = prompts::render_prompt(in).user;
  // The trajectory (both policies): one line per turn, the first line of a failure's detail.
  const std::string trajectory =
      "- turn 1: compile_error (syntax) - kernel.cu:3:1: error: expected ';'\n"
      "- turn 2: pass, 0.057 ms, 1.10x - first correct kernel\n"
      "- turn 3: pass, 0.046 ms, 1.37x - 20% faster than the best before it (turn 2, 0.057 ms); "
      "memory-bound\n";
  CHECK_THAT(all, Catch::Contains(trajectory));
  // --history all: every attempt in full, oldest first; last: the last alone.
  CHECK_THAT(all, Catch::Contains("### Your attempt at turn 3"));
  CHECK_THAT(all, Catch::Contains("### Your attempt at turn 2"));
  CHECK_THAT(all, Catch::Contains("ZZSECONDLINE"));
  in.policy = prompts::HistoryPolicy::last;
  const auto last = prompts::render_prompt(in).user;
  CHECK_THAT(last, Catch::Contains(trajectory));
  CHECK(last.find("### Your attempt at turn 2") == std::string::npos);
  CHECK(last.find("ZZSECONDLINE") == std::string::npos);
}

TEST_CASE("the ABI in the output format matches kforge/kernel_abi.h", "[prompts]") {
  const std::string header = read_file(kforge_home() / "backends/abi/kforge/kernel_abi.h");
  const std::string abi = prompts::load_template("abi.md");
  std::regex enum_re(R"((KF_[A-Z0-9]+) = ([0-9]+))");
  int n = 0;
  for (std::sregex_iterator it(abi.begin(), abi.end(), enum_re), end; it != end; ++it, ++n)
    CHECK_THAT(header, Catch::Contains((*it)[1].str() + " = " + (*it)[2].str()));
  CHECK(n == 12);  // float32 .. bool, complex64, complex128
  for (const char* field : {"void* data;", "int32_t dtype;", "int32_t ndim;", "int64_t sizes[KF_MAX_DIMS];",
                            "int64_t strides[KF_MAX_DIMS];", "int32_t device;", "#define KF_MAX_DIMS 8"})
    CHECK_THAT(header, Catch::Contains(field));
}

TEST_CASE("tolerances: task overrides and default tolerances per output dtype", "[prompts]") {
  prompts::PromptInput in;
  in.tensors = {{"input", "x", "input", "float16", {4}},
                {"output", "a", "output", "float16", {4}},
                {"output", "b", "output", "int64", {4}},
                {"output", "c", "output", "float16", {4}}};
  CHECK(prompts::render_tolerances(in) ==
        "- float16 outputs: atol 0.01, rtol 0.01\n- int64 outputs: exact (every element equal)\n");
  Task t;
  t.tolerances["float16"] = {5e-2, 1e-3};
  in.tolerances = agent::output_tolerances(t, in.tensors);
  REQUIRE(in.tolerances.size() == 2);
  CHECK(prompts::render_tolerances(in) ==
        "- float16 outputs: atol 0.05, rtol 0.001\n- int64 outputs: exact (every element equal)\n");
}

TEST_CASE("exemplars show their reference source on a suite that lacks their tasks", "[prompts]") {
  // A KernelBench run: none of the exemplar ids is in the run's suite.
  auto suite = load_suite(fs::path(KFORGE_TESTS_DIR) / "fixtures/kernelbench");
  std::map<std::string, std::string> refs;
  for (const auto& t : suite.tasks) refs[t.id] = t.source;
  for (const std::string backend : {"cuda", "cpu"}) {
    retrieval::ExemplarStore store(kforge_home() / "prompts/exemplars" / backend,
                                   agent::exemplar_reference_source(refs));
    REQUIRE(store.exemplars().size() >= 14);
    for (const auto& e : store.exemplars()) {
      INFO(e.task_id);
      CHECK_THAT(e.reference, Catch::Contains("class Model"));
    }
  }
  // The run's own (profiled) source wins where the run has the id.
  auto of = agent::exemplar_reference_source({{"activation/gelu_tanh", "PROFILED"}});
  CHECK(of("activation/gelu_tanh") == "PROFILED");
  CHECK(of("no/such") == "");
}

TEST_CASE("hardware facts from /proc/cpuinfo, the runner hello and nvidia-smi", "[prompts]") {
  const char* cpuinfo =
      "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t\t: 0\ncpu "
      "cores\t: 2\n\n"
      "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t\t: 1\ncpu "
      "cores\t: 2\n\n"
      "processor\t: 2\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t\t: 0\ncpu "
      "cores\t: 2\n\n"
      "processor\t: 3\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nphysical id\t: 0\ncore id\t\t: 1\ncpu "
      "cores\t: 2\n";
  auto c = agent::parse_cpuinfo(cpuinfo);
  CHECK(c.name == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(c.cores == 2);
  CHECK(c.threads == 4);
  auto live = agent::cpu_facts();
  CHECK(live.threads >= 1);
  CHECK(live.omp_threads >= 1);
  CHECK(live.simd_bits >= 128);

  auto hello = nlohmann::json::parse(
      R"({"ok":true,"devices":[{"index":0,"name":"NVIDIA H100 80GB HBM3","cc":"9.0","memory_bytes":85045870592}]})");
  auto g = agent::parse_cuda_facts(hello, 0, "");
  CHECK(g.name == "NVIDIA H100 80GB HBM3");
  CHECK(g.compute_capability == "9.0");
  CHECK(g.sm_count == 132);  // vendor figure: the hello has no SM count
  CHECK(g.spec_bandwidth_gbps == 3350);
  CHECK(std::abs(g.memory_gib - 79.2) < 0.1);
  auto s = agent::parse_cuda_facts(nlohmann::json(), 1,
                                   "0, NVIDIA A100-SXM4-80GB, 81920, 8.0\n1, NVIDIA H200, 143771, 9.0\n");
  CHECK(s.name == "NVIDIA H200");
  CHECK(s.compute_capability == "9.0");
  CHECK(s.spec_bandwidth_gbps == 4800);
  CHECK(agent::cuda_index("cuda:3") == 3);
  CHECK(agent::cuda_index("cuda") == 0);
}

TEST_CASE("the prompt's code fences and pointer wording follow the backend (Backend::prompt_language)",
          "[prompts]") {
  auto in = golden_input("cuda", "turn1");
  REQUIRE_FALSE(in.exemplars.empty());
  CHECK_THAT(prompts::render_prompt(in).user, Catch::Contains("```cuda"));
  in.language = "toy";
  in.device_type = "cpu";
  const auto p = prompts::render_prompt(in).user;
  CHECK_THAT(p, Catch::Contains("```toy"));
  CHECK_THAT(p, Catch::Contains("host pointer"));
}

TEST_CASE("a triton prompt: python fences, the Triton output format", "[prompts]") {
  auto in = golden_input("triton", "turn1");
  in.language = "python";
  in.device_type = "cuda";
  in.device = "cuda:0";
  in.hardware = fake_facts("cuda");
  const auto p = prompts::render_prompt(in);
  CHECK(p.system.find("Triton kernels") != std::string::npos);
  CHECK(p.user.find("def kf_forward(*inputs)") != std::string::npos);
  CHECK(p.user.find("torch_fallback") != std::string::npos);
  CHECK(p.user.find("extern \"C\"") == std::string::npos);  // no C ABI in a Triton prompt
}

TEST_CASE("a backend's templates live in its folder (Backend::prompts_dir)", "[prompts]") {
  // Every registered backend has its own system message and output formats in its folder, the
  // place the prompts library looks for them when the caller names no other.
  for (const auto& name : backends::backend_names()) {
    // The shipped backends (a test may register one of its own, test_backends' toy-test-backend,
    // which has no folder).
    if (!fs::is_directory(kforge_home() / "backends" / name)) continue;
    const fs::path dir = backends::get_backend(name).prompts_dir();
    CHECK(dir == prompts::backend_templates_dir(name));
    for (const char* f : {"system.md", "output_format.md", "output_format_operator.md", "operator_write.md"})
      CHECK(fs::exists(dir / f));
    CHECK_FALSE(fs::exists(prompts::templates_dir() / ("system_" + name + ".md")));
  }
  // A backend whose templates are elsewhere (PromptInput::backend_prompts) gets them, and the
  // backend-independent sections still come from prompts/templates.
  const fs::path dir = scratch("prompts_backend_dir");
  write_file(dir / "system.md", "toy system on {{device}}\n");
  write_file(dir / "output_format.md", "## Output format\n\ntoy format\n{{abi}}\n");
  auto in = golden_input("cpu", "turn1");
  in.backend = "toy";
  in.backend_prompts = dir;
  const auto p = prompts::render_prompt(in);
  CHECK(p.system.rfind("toy system on ", 0) == 0);
  CHECK(p.user.find("toy format") != std::string::npos);
  CHECK(p.user.find("kforge/kernel_abi.h") != std::string::npos);  // abi.md, shared
  in.backend_prompts.clear();
  std::string error;
  try {
    prompts::render_prompt(in);
  } catch (const std::exception& e) {
    error = e.what();
  }
  CHECK(error.find("backends/toy/prompts/system.md") != std::string::npos);
}

TEST_CASE("an operator task asks for the function in its backend's own words (operator_write.md)",
          "[prompts]") {
  const std::map<std::string, std::string> expected = {
      {"cpu", "Write, in C++ for the CPU, the function `extern \"C\" int add_kernel_impl(...)`"},
      {"cuda", "Write, in CUDA C++, the function `extern \"C\" int add_kernel_impl(...)`"},
      {"triton", "Write, in Triton, the function `add_kernel_impl(*args, **kwargs)`"}};
  for (const auto& [backend, line] : expected) {
    INFO(backend);
    auto in = golden_input(backend == "triton" ? "cpu" : backend, "turn1");
    in.backend = backend;
    in.aten_op = "aten.add.Tensor";
    in.entries = {"add_kernel_impl"};
    in.cases_table = "| case | args |\n|---|---|\n| 0 | T([4], f32), T([4], f32) |\n";
    const auto p = prompts::render_prompt(in);
    CHECK(p.user.find(line) != std::string::npos);
    CHECK(p.user.find("{{") == std::string::npos);
  }
  // A backend of its own words: the line is read from its folder.
  const fs::path dir = scratch("prompts_operator_write");
  for (const char* f : {"system.md", "output_format.md", "output_format_operator.md"})
    write_file(dir / f, std::string("toy ") + f + "\n");
  write_file(dir / "operator_write.md", "Write, in Toy, `{{entry}}`\n");
  auto in = golden_input("cpu", "turn1");
  in.backend = "toy";
  in.backend_prompts = dir;
  in.aten_op = "aten.add.Tensor";
  in.entries = {"add_kernel_impl"};
  in.cases_table = "| case | args |\n|---|---|\n| 0 | T([4], f32) |\n";
  CHECK(prompts::render_prompt(in).user.find("Write, in Toy, `add_kernel_impl`: an implementation") !=
        std::string::npos);
}
