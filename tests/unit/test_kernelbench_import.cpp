// [kernelbench_import] `kforge import-kernelbench` (issue 23 §1): KernelBench-style generations
// (tests/data/kernelbench_generations, written for kforge: load_inline with literal sources,
// names bound to them, `+` and lists, a number argument; an f-string source and a forward with
// PyTorch code around the call, which are not self-contained) become cuda kernels that nvcc
// builds through kforge's own cuda build (the symbol check included), or a per-file error
// naming the file and the reason. Judging them needs a GPU: that part skips without one.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/kernelbench_import.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using kforge::test::Ran;
using kforge::test::run_kforge;
using kforge::test::slurp;

namespace {

const fs::path kGenerations = fs::path(KFORGE_TESTS_DIR) / "data/kernelbench_generations";
const fs::path kSuite = fs::path(KFORGE_TESTS_DIR) / "fixtures/kernelbench";

}  // namespace

TEST_CASE("parse_generation_name reads KernelBench's generation file names", "[kernelbench_import]") {
  using kforge::agent::parse_generation_name;
  auto g = parse_generation_name("level_1_problem_19_sample_0_kernel.py");
  REQUIRE(g);
  CHECK(g->level == 1);
  CHECK(g->problem == 19);
  CHECK(g->sample == 0);
  g = parse_generation_name("level_3_problem_44_sample_12_kernel.py");
  REQUIRE(g);
  CHECK(g->sample == 12);
  CHECK(!parse_generation_name("level_1_problem_19_sample_0_prompt.txt"));
  CHECK(!parse_generation_name("level_1_problem_19_kernel.py"));
  CHECK(!parse_generation_name("xlevel_1_problem_19_sample_0_kernel.py"));
}

TEST_CASE("import_load_inline: self-contained sources convert, dynamic ones are refused with a reason",
          "[kernelbench_import]") {
  using kforge::agent::import_load_inline;
  auto k = import_load_inline(kGenerations / "level_2_problem_5_sample_0_kernel.py");
  INFO(k.reason);
  REQUIRE(k.ok);
  CHECK(k.kernel.find("tanh_sigmoid_kernel") != std::string::npos);  // cuda_sources, joined by `+`
  CHECK(k.kernel.find("return tanh_sigmoid_cuda(call.in(0)); ") !=
        std::string::npos);  // .contiguous() dropped
  CHECK(k.kernel.find("\n#include <torch/extension.h>") ==
        std::string::npos);  // LibTorch headers commented out
  REQUIRE(k.notes.size() == 1);
  CHECK(k.notes[0].find("--use_fast_math") != std::string::npos);

  k = import_load_inline(kGenerations / "level_1_problem_1_sample_0_kernel.py");
  REQUIRE(k.ok);
  CHECK(k.kernel.find("return scale_cuda(call.in(0), 2.0); ") != std::string::npos);

  k = import_load_inline(kGenerations / "level_1_problem_19_sample_0_kernel.py");
  CHECK(!k.ok);
  CHECK(k.reason.find("f-string") != std::string::npos);
  CHECK(k.line == 8);
  k = import_load_inline(kGenerations / "level_1_problem_19_sample_1_kernel.py");
  CHECK(!k.ok);
  CHECK(k.reason.find("does more than return one call") != std::string::npos);
}

TEST_CASE("import_load_inline names why a generation is not self-contained", "[kernelbench_import]") {
  const fs::path dir = scratch("kernelbench_import_reasons");
  const std::string head =
      "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
      "src = \"torch::Tensor f(torch::Tensor x, torch::Tensor w) { return x; }\"\n";
  const std::string model =
      "class ModelNew(nn.Module):\n    def forward(self, x):\n        return m.f(x, x)\n";
  struct Case {
    const char* name;
    std::string text;
    const char* reason;
  };
  const std::vector<Case> cases{
      {"parameter",
       head + "m = load_inline(name='m', cpp_sources='', cuda_sources=src, functions=['f'])\n" +
           "class ModelNew(nn.Module):\n    def forward(self, x):\n        return m.f(x, self.weight)\n",
       "argument 2 of the call (`self.weight`) is neither one of forward's inputs nor a number"},
      {"ldflags",
       head +
           "m = load_inline(name='m', cpp_sources='', cuda_sources=src, functions=['f'], "
           "extra_ldflags=['-lcublas'])\n" +
           model,
       "extra_ldflags is not empty"},
      {"computed",
       head +
           "m = load_inline(name='m', cpp_sources='', cuda_sources=open('k.cu').read(), "
           "functions=['f'])\n" +
           model,
       "cuda_sources is built when the file runs (Call"},
      {"reassigned",
       head +
           "src = src.replace('x', 'y')\n"
           "m = load_inline(name='m', cpp_sources='', cuda_sources=src, functions=['f'])\n" +
           model,
       "cuda_sources names `src`, which is not a string literal bound once"},
      {"unlisted",
       head + "m = load_inline(name='m', cpp_sources='', cuda_sources=src, functions=['g'])\n" + model,
       "forward calls `f`, which is not in load_inline's functions"},
      {"bindings",
       head +
           "m = load_inline(name='m', cpp_sources='', cuda_sources=src + 'PYBIND11_MODULE(m, x) {}', "
           "functions=['f'])\n" +
           model,
       "defines its own Python bindings"},
      {"no_model", head + "m = load_inline(name='m', cpp_sources='', cuda_sources=src, functions=['f'])\n",
       "no class ModelNew"},
      {"syntax", "class ModelNew(:\n", "not valid Python"},
      {"bytes", std::string("x = '\xff\xfe'\n"), "not UTF-8 text"},
  };
  for (const auto& c : cases) {
    const fs::path f = dir / (std::string(c.name) + ".py");
    std::ofstream(f, std::ios::binary) << c.text;
    const auto k = kforge::agent::import_load_inline(f);
    INFO(c.name << ": " << k.reason);
    CHECK(!k.ok);
    CHECK(k.reason.find(c.reason) != std::string::npos);
  }
}

TEST_CASE("kforge import-kernelbench writes cuda kernels that nvcc builds, and names what it refused",
          "[kernelbench_import][cli]") {
  const fs::path dir = scratch("kernelbench_import");
  const fs::path out = dir / "kernels";
  // A kernel an earlier import wrote for a generation that no longer imports is removed.
  const fs::path stale = out / "level1/19_ReLU/0/kernel.cu";
  fs::create_directories(stale.parent_path());
  std::ofstream(stale) << "// stale\n";
  Ran r = run_kforge({"import-kernelbench", "--suite", kSuite.string(), "--generations",
                      kGenerations.string(), "--out", out.string()},
                     dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("imported 2 of 4 generation(s)") != std::string::npos);
  CHECK(r.err.find("level_1_problem_19_sample_0_kernel.py: not imported: cuda_sources is an f-string") !=
        std::string::npos);
  CHECK(r.err.find("level_1_problem_19_sample_1_kernel.py: not imported: ModelNew.forward does more") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(stale));
  const json ni = json::parse(slurp(out / "not_imported.json"));
  CHECK(ni.size() == 2);
  const std::vector<fs::path> kernels{out / "level1/1_Square_matrix_add/0/kernel.cu",
                                      out / "level2/5_Tanh_Sigmoid/0/kernel.cu"};
  for (const auto& k : kernels) REQUIRE(fs::is_regular_file(k));
  // eval pointed at the generations themselves says what to do.
  Ran e = run_kforge({"eval", "--suite", kSuite.string(), "--backend", "cuda", "--kernels",
                      kGenerations.string(), "--out", (dir / "wrong").string()},
                     dir);
  CHECK(e.code == 2);
  CHECK(e.err.find("holds KernelBench generations") != std::string::npos);
  CHECK(e.err.find("kforge import-kernelbench --suite") != std::string::npos);
  // Bad arguments: a folder with no generation files.
  CHECK(run_kforge({"import-kernelbench", "--suite", kSuite.string(), "--generations", dir.string(), "--out",
                    (dir / "x").string()},
                   dir)
            .code == 2);

  const bool nvcc =
      fs::exists("/usr/local/cuda/bin/nvcc") || kforge::backends::find_executable("nvcc").has_value();
  if (!nvcc) {
    WARN("SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin): the imported kernels' build is not checked");
    return;
  }
  kforge::backends::CompileOptions o;
  o.arch = "sm_90a";  // no device here
  for (const auto& k : kernels) {
    const auto res = kforge::backends::compile(kforge::backends::get_backend("cuda"), slurp(k),
                                               dir / "build" / k.parent_path().parent_path().filename(), o);
    INFO(k.string() << "\n" << res.log);
    CHECK(res.ok());  // compiled, linked with --no-undefined, and no forbidden symbol
  }

  if (!fs::exists("/dev/nvidia0")) {
    WARN(
        "SKIPPED: no GPU: judging the imported kernels needs one (kforge eval --suite "
        "tests/fixtures/kernelbench "
        "--backend cuda --kernels " +
        out.string() + " --out RUN)");
    return;
  }
  r = run_kforge({"eval", "--suite", kSuite.string(), "--backend", "cuda", "--no-bench", "--kernels",
                  out.string(), "--out", (dir / "run").string()},
                 dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const auto recs = kforge::load_attempts(dir / "run").records;
  REQUIRE(recs.size() == 2);
  for (const auto& rec : recs) CHECK(rec.outcome == kforge::Outcome::pass);
}
