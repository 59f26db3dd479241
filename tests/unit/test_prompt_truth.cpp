// [prompts][issue39] What a prompt states is true and fits the task (issue 39): precision lines
// only where the backend can use them and the same run-level line on every task; the module-mode
// paragraph only where it matters; the cpu output rules and system message agree with the build;
// the scratch-buffer rule and the reply's token limit; the trajectory of earlier turns with the
// best kernel so far; exemplars chosen by the task's dominant operations, with their reason.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/hardware.hpp"
#include "kforge/agent/judged_checks.hpp"
#include "kforge/agent/prompt_context.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "kforge/prompts/prompts.hpp"
#include "kforge/retrieval/retrieval.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

/// A KernelBench level-2 style source: `body` is the forward's body, `init` its modules.
std::string kb_source(const std::string& init, const std::string& body) {
  return "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n" +
         init + "\n    def forward(self, x):\n" + body +
         "\n\ndef get_inputs():\n    return [torch.randn(8, 16)]\n\ndef get_init_inputs():\n    return []\n";
}

const std::string kGemmRelu =
    kb_source("        self.fc = nn.Linear(16, 32)",
              "        x = self.fc(x)\n        x = torch.relu(x)\n        return x * 2.0");
const std::string kConvTanh = kb_source("        self.conv = nn.Conv2d(3, 8, 3)",
                                        "        x = self.conv(x)\n        return torch.tanh(x) + 1.0");
const std::string kLayerNormOnly =
    kb_source("        self.ln = nn.LayerNorm(16)", "        return self.ln(x)");
const std::string kBatchNorm = kb_source("        self.bn = nn.BatchNorm2d(8)", "        return self.bn(x)");

prompts::PastAttempt past(int turn, Outcome o, double ms, double speedup, const std::string& detail = "") {
  prompts::PastAttempt a;
  a.turn = turn;
  a.outcome = o;
  a.t_candidate_ms = ms;
  a.speedup = speedup;
  a.detail = detail;
  a.source = "// turn " + std::to_string(turn) + " code";
  return a;
}

prompts::PromptInput cpu_input() {
  prompts::PromptInput in;
  in.backend = "cpu";
  in.task_id = "level2/1_Gemm_ReLU";
  in.category = "fusion";
  in.reference = kGemmRelu;
  in.device = "cpu";
  in.hardware.kind = "cpu";
  in.hardware.name = "Test CPU";
  in.hardware.simd = "AVX-512";
  in.hardware.simd_bits = 512;
  in.tensors = {{"input", "x", "input", "float32", {8, 16}}, {"output", "out", "output", "float32", {8, 32}}};
  return in;
}

}  // namespace

TEST_CASE("precision lines: only what the backend can use, the same run line on every task",
          "[prompts][issue39]") {
  Task conv, gemm;
  conv.id = "level2/conv";
  conv.allow_precision = {"tf32"};  // the KernelBench loader's rule for convolutions
  gemm.id = "level2/gemm";
  const std::vector<backends::TensorSpec> out = {{"out", "output", "float32", {4}}};
  const std::vector<std::string> run_tf32 = {"tf32"};

  // cpu: TF32 is never stated, whether the run or the task allows it, and no detection is claimed.
  for (const auto* t : {&conv, &gemm}) {
    const auto lines =
        joined(agent::judged_checks(*t, out, 5, agent::precision_contract("cpu", "cpu", run_tf32, *t)));
    CHECK_FALSE(has(lines, "tf32"));
    CHECK_FALSE(has(lines, "TF32"));
    CHECK_FALSE(has(lines, "detected"));
    CHECK(has(lines, "lower precision allowed in this run: none"));
  }
  // cuda: conv and GEMM tasks of one run carry the same run-level sentence; the conv task adds
  // its own allowance with the reason.
  const auto c =
      joined(agent::judged_checks(conv, out, 5, agent::precision_contract("cuda", "cuda", {}, conv)));
  const auto g =
      joined(agent::judged_checks(gemm, out, 5, agent::precision_contract("cuda", "cuda", {}, gemm)));
  CHECK(has(c, "lower precision allowed in this run: none; allowed for this task too: tf32 (PyTorch runs"));
  CHECK(has(g, "lower precision allowed in this run: none\n"));
  CHECK(has(c, "detected in the compiled binary"));
  // A run that allows tf32 says so on both, and the conv task no longer repeats it.
  const auto c2 =
      joined(agent::judged_checks(conv, out, 5, agent::precision_contract("cuda", "cuda", run_tf32, conv)));
  const auto g2 =
      joined(agent::judged_checks(gemm, out, 5, agent::precision_contract("cuda", "cuda", run_tf32, gemm)));
  CHECK(has(c2, "lower precision allowed in this run: tf32\n"));
  CHECK(has(g2, "lower precision allowed in this run: tf32\n"));
  // triton: a GPU (tf32 is meaningful) whose binaries are not inspected: no detection claimed.
  const auto tr =
      joined(agent::judged_checks(conv, out, 5, agent::precision_contract("triton", "cuda", {}, conv)));
  CHECK(has(tr, "allowed for this task too: tf32"));
  CHECK_FALSE(has(tr, "detected"));
}

TEST_CASE("the module-mode paragraph appears only where the mode matters, and says what to update",
          "[prompts][issue39]") {
  CHECK(prompts::module_mode_paragraph(kGemmRelu, "train").empty());
  CHECK(prompts::module_mode_paragraph(kLayerNormOnly, "eval").empty());
  const auto train_bn = prompts::module_mode_paragraph(kBatchNorm, "train");
  CHECK(has(train_bn, "**training mode**"));
  CHECK(has(train_bn, "statistics of the batch"));
  CHECK(has(train_bn, "Do not update the running statistics"));
  CHECK(has(train_bn, "compares them bit for bit"));
  const auto eval_bn = prompts::module_mode_paragraph(kBatchNorm, "eval");
  CHECK(has(eval_bn, "running statistics"));
  CHECK_FALSE(has(eval_bn, "Dropout"));
  // Rendered: a GEMM task of a training-mode suite gets no BatchNorm paragraph.
  auto in = cpu_input();
  in.module_mode = "train";
  CHECK_FALSE(has(prompts::render_prompt(in).user, "BatchNorm"));
  in.reference = kBatchNorm;
  CHECK(has(prompts::render_prompt(in).user, "Do not update the running statistics"));
}

TEST_CASE("cpu: the output rules and the system message agree on intrinsics, and the build accepts them",
          "[prompts][issue39]") {
  const auto p = prompts::render_prompt(cpu_input());
  CHECK(has(p.system, "intrinsics for AVX-512 from `<immintrin.h>`"));
  CHECK(has(p.user, "`<immintrin.h>` (for AVX-512)"));
  CHECK_FALSE(has(p.user, "includes only standard headers, `<omp.h>`"));
  // The cpu backend's build (g++ -march=native) accepts an intrinsics kernel for this machine's
  // vector ISA, as the live facts name it.
  const auto facts = agent::cpu_facts();
  std::string body;
  if (facts.simd == "AVX-512")
    body = "__m512 v = _mm512_loadu_ps(x + i); _mm512_storeu_ps(y + i, _mm512_add_ps(v, v));";
  if (facts.simd.rfind("AVX2", 0) == 0)
    body = "__m256 v = _mm256_loadu_ps(x + i); _mm256_storeu_ps(y + i, _mm256_add_ps(v, v));";
  if (body.empty()) {
    WARN("SKIPPED (the build half): no AVX2 or AVX-512 on this machine (" + facts.simd + ")");
    return;
  }
  const std::string src =
      "#include <immintrin.h>\n#include <kforge/kernel_abi.h>\n"
      "extern \"C\" int kf_forward(const kf_tensor* in, int, kf_tensor* out, int, void*) {\n"
      "  const float* x = (const float*)in[0].data; float* y = (float*)out[0].data;\n"
      "  for (int64_t i = 0; i + 16 <= kf_numel(&in[0]); i += 16) { " +
      body + " }\n  return 0;\n}\n";
  backends::CompileOptions co;
  co.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  auto r = backends::compile(backends::get_backend("cpu"), src, scratch("prompt-truth-intrinsics"), co);
  INFO(r.summary);
  CHECK(r.ok());
}

TEST_CASE("the scratch-buffer rule and the reply's token limit are stated", "[prompts][issue39]") {
  auto in = cpu_input();
  CHECK_FALSE(has(prompts::render_prompt(in).user, "--max-tokens"));
  in.max_tokens = 4096;
  const auto cpu = prompts::render_prompt(in).user;
  CHECK(has(cpu, "Your reply is limited to 4096 tokens"));
  CHECK(has(cpu, "a scratch buffer your kernel allocates may be kept and reused across calls"));
  CHECK_FALSE(has(cpu, "Do not keep pointers between calls."));
  in.backend = "cuda";
  in.language = "cuda";
  in.device_type = "cuda";
  CHECK(has(prompts::render_prompt(in).user,
            "a scratch buffer your kernel allocates (`cudaMalloc`) may be kept"));
  in.backend = "triton";
  in.language = "python";
  CHECK(has(prompts::render_prompt(in).user, "a scratch buffer is allocated in each call"));
}

TEST_CASE("the trajectory: one line per earlier turn, the best kernel so far, a fixed budget",
          "[prompts][issue39]") {
  auto in = cpu_input();
  in.history = {past(1, Outcome::pass, 0.600, 2.44),
                past(2, Outcome::output_mismatch, 0, 0,
                     "trial 2 of 7 (standard): seed 1001, output 'out': max abs err 0.2\nsecond line"),
                past(3, Outcome::pass, 0.556, 0.66)};
  in.history[1].sub_kind = "tolerance";
  const auto p = prompts::render_prompt(in).user;
  CHECK(has(p,
            "### Trajectory (one line per earlier turn, oldest first)\n\n"
            "- turn 1: pass, 0.600 ms, 2.44x - first correct kernel\n"
            "- turn 2: output_mismatch (tolerance) - trial 2 of 7 (standard): seed 1001, output 'out': "
            "max abs err 0.2\n"
            "- turn 3: pass, 0.556 ms, 0.66x - 7% faster than the best before it (turn 1, 0.600 ms)\n"
            "\nBest kernel so far: turn 3, 0.556 ms, 0.66x.\n"));
  CHECK_FALSE(has(p, "second line"));
  // --history last: the last attempt's code alone in full; all: every attempt's.
  CHECK(has(p, "// turn 3 code"));
  CHECK_FALSE(has(p, "// turn 1 code"));
  in.policy = prompts::HistoryPolicy::all;
  const auto all = prompts::render_prompt(in).user;
  CHECK(has(all, "// turn 1 code"));
  CHECK(has(all, "// turn 2 code"));
  CHECK(all.find("// turn 1 code") < all.find("// turn 3 code"));
  // A timing anomaly is named instead of a trend.
  in.history[2].timing_anomaly = "reference times disagree";
  CHECK(has(prompts::render_prompt(in).user, "timing unreliable (reference times disagree)"));
  // The budget: the oldest lines go first, the section says so, the best line stays.
  in.history.clear();
  for (int t = 1; t <= 40; ++t) in.history.push_back(past(t, Outcome::pass, 1.0 - t * 0.01, 1.0 + t * 0.01));
  in.history[0].t_candidate_ms = 0.1;  // turn 1 stays the best
  in.trajectory_budget = 120;
  const auto cut = prompts::render_trajectory(in.history, in.trajectory_budget);
  CHECK(cut.size() <= 120 * 4 + 200);
  CHECK(has(cut, "older turn(s) omitted to fit the trajectory's 120-token budget"));
  CHECK(has(cut, "- turn 40: pass"));
  CHECK_FALSE(has(cut, "- turn 1: pass"));
  CHECK(has(cut, "Best kernel so far: turn 1, 0.100 ms"));
}

TEST_CASE("exemplars that fit: a fusion task's exemplar follows its dominant operations",
          "[prompts][issue39]") {
  CHECK(retrieval::task_ops(kGemmRelu).label() == "GEMM + epilogue");
  CHECK(retrieval::task_ops(kConvTanh).label() == "convolution + epilogue");
  CHECK(retrieval::task_ops(kLayerNormOnly).label() == "normalisation");
  CHECK(retrieval::task_ops("def forward(self, x):\n    return torch.sum(x, dim=1)").label() == "reduction");
  CHECK_FALSE(retrieval::task_ops("    @staticmethod\n    def f(x):\n        return x").gemm);
  for (const std::string backend : {"cpu", "cuda", "triton"}) {
    INFO(backend);
    retrieval::ExemplarStore store(kforge_home() / "prompts/exemplars" / backend,
                                   agent::exemplar_reference_source({}));
    auto g = store.select(retrieval::Strategy::category, "level2/1_Gemm_ReLU", "fusion", kGemmRelu);
    REQUIRE(g.size() == 1);
    CHECK(g[0].task_id == "fusion/gemm_bias_gelu");
    CHECK(g[0].reason == "GEMM + epilogue");
    auto c = store.select(retrieval::Strategy::category, "level2/2_Conv_Tanh", "fusion", kConvTanh);
    REQUIRE(c.size() == 1);
    CHECK(c[0].task_id == "fusion/conv2d_relu_bias");
    CHECK(c[0].reason == "convolution + epilogue");
    auto n = store.select(retrieval::Strategy::category, "level2/3_LN", "fusion", kLayerNormOnly);
    REQUIRE(n.size() == 1);
    CHECK(retrieval::task_ops(n[0].reference).main() == "normalisation");
    // A category that says something keeps its own exemplar.
    auto a = store.select(retrieval::Strategy::category, "activation/x", "activation", kGemmRelu);
    REQUIRE(a.size() == 1);
    CHECK(a[0].category == "activation");
    CHECK(a[0].reason == "same category (activation)");
    // The run's own passes join the pool: the library strategy picks the one that fits.
    std::vector<retrieval::Exemplar> lib = {{"level2/9_LN", "fusion", kLayerNormOnly, "// ln", ""},
                                            {"level2/8_Conv", "fusion", kConvTanh, "// conv", ""}};
    auto l = store.select(retrieval::Strategy::library, "level2/2_Conv_Tanh2", "fusion", kConvTanh, lib);
    REQUIRE(l.size() == 1);
    CHECK(l[0].task_id == "level2/8_Conv");
    CHECK(l[0].reason == "convolution + epilogue (a kernel that passed in this run)");
  }
  // The reason reaches the prompt.
  auto in = cpu_input();
  retrieval::ExemplarStore store(kforge_home() / "prompts/exemplars/cpu",
                                 agent::exemplar_reference_source({}));
  in.exemplars = store.select(retrieval::Strategy::category, in.task_id, in.category, in.reference);
  CHECK(has(prompts::render_prompt(in).user,
            "## Example: task `fusion/gemm_bias_gelu` (category: fusion; chosen for: GEMM + epilogue)"));
}
