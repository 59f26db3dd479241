// [eval_samples] `kforge eval` with several samples per task (issue 23 §1): DIR/<task>/<N>/kernel.cpp
// beside DIR/<task>/kernel.cpp (sample 0), each recorded with its sample index, pass@k (the
// unbiased estimator) in eval's summary and, for every k up to the samples, in `kforge report`.
// The real binary and the real runner on the cpu backend, ci shapes, no bench.
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using kforge::test::Ran;
using kforge::test::run_kforge;
using kforge::test::slurp;

namespace {

void write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

/// Compiles, runs, and writes zeros: an output_mismatch.
const char* kZeros = R"(#include "kforge/kernel_abi.h"
int kf_forward(const kf_tensor* in, int n_in, kf_tensor* out, int n_out, void* stream) {
  (void)in; (void)n_in; (void)stream;
  for (int o = 0; o < n_out; ++o) {
    float* p = (float*)out[o].data;
    for (int64_t i = 0; i < kf_numel(&out[o]); ++i) p[i] = 0.0f;
  }
  return 0;
}
)";

const char* kBroken = "#include \"kforge/kernel_abi.h\"\nint kf_forward( {\n";  // compile_error

}  // namespace

TEST_CASE("find_kernel_samples: the top-level kernel is sample 0, numbered folders are samples",
          "[eval_samples]") {
  const fs::path d = scratch("eval_samples_find");
  write(d / "t/kernel.cpp", "a");
  write(d / "t/2/kernel.cpp", "b");
  write(d / "t/10/kernel.cpp", "c");
  write(d / "t/best/kernel.cpp", "d");  // not a number: named, not judged
  write(d / "t/3/other.cpp", "e");      // no kernel file: not a sample
  auto ks = kforge::agent::find_kernel_samples(d / "t", "kernel.cpp");
  REQUIRE(ks.samples.size() == 3);
  CHECK(ks.samples[0] == std::pair<int, fs::path>{0, d / "t/kernel.cpp"});
  CHECK(ks.samples[1].first == 2);
  CHECK(ks.samples[2].first == 10);
  REQUIRE(ks.errors.size() == 1);
  CHECK(ks.errors[0].find("best/kernel.cpp") != std::string::npos);
  // A 0/ folder beside the top-level kernel: two kernels for sample 0, neither judged.
  write(d / "t/0/kernel.cpp", "f");
  ks = kforge::agent::find_kernel_samples(d / "t", "kernel.cpp");
  REQUIRE(ks.samples.size() == 2);
  CHECK(ks.samples[0].first == 2);
  REQUIRE(ks.errors.size() == 2);
  CHECK(ks.errors[1].find("two kernels for sample 0") != std::string::npos);
  CHECK(kforge::agent::find_kernel_samples(d / "missing", "kernel.cpp").samples.empty());
}

TEST_CASE("kforge eval: several samples per task, sample indices recorded, pass@k in eval and report",
          "[eval_samples][cli]") {
  const fs::path dir = scratch("eval_samples_cli");
  const fs::path k = dir / "kernels";
  const fs::path ex = fs::path(KFORGE_TESTS_DIR).parent_path() / "prompts/exemplars/cpu";
  const std::string gelu = slurp(ex / "activation/gelu_tanh/kernel.cpp");
  const std::string film = slurp(ex / "broadcast/film_modulation/kernel.cpp");
  REQUIRE(!gelu.empty());
  REQUIRE(!film.empty());
  // gelu_tanh: n = 4, c = 2 (samples 0 and 3 pass; 1 does not compile; 2 writes zeros).
  write(k / "activation/gelu_tanh/kernel.cpp", gelu);
  write(k / "activation/gelu_tanh/1/kernel.cpp", kBroken);
  write(k / "activation/gelu_tanh/2/kernel.cpp", kZeros);
  write(k / "activation/gelu_tanh/3/kernel.cpp", gelu);
  // film_modulation: n = 2, c = 1 (sample 0 writes zeros, sample 1 passes).
  write(k / "broadcast/film_modulation/0/kernel.cpp", kZeros);
  write(k / "broadcast/film_modulation/1/kernel.cpp", film);
  write(k / "broadcast/film_modulation/final/kernel.cpp", film);  // not a sample: said, not judged
  const fs::path out = dir / "out";
  Ran r = run_kforge({"eval", "--suite", "kforge-core", "--backend", "cpu", "--profile", "ci", "--no-bench",
                      "--trials", "1", "--kernels", k.string(), "--out", out.string()},
                     dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("final/kernel.cpp: not a sample") != std::string::npos);

  std::map<std::pair<std::string, int>, kforge::AttemptRecord> by;
  for (const auto& x : kforge::load_attempts(out).records) by[{x.task, x.sample}] = x;
  REQUIRE(by.size() == 6);
  using kforge::Outcome;
  CHECK(by[{"activation/gelu_tanh", 0}].outcome == Outcome::pass);
  CHECK(by[{"activation/gelu_tanh", 1}].outcome == Outcome::compile_error);
  CHECK(by[{"activation/gelu_tanh", 2}].outcome == Outcome::output_mismatch);
  CHECK(by[{"activation/gelu_tanh", 3}].outcome == Outcome::pass);
  CHECK(by[{"broadcast/film_modulation", 0}].outcome == Outcome::output_mismatch);
  CHECK(by[{"broadcast/film_modulation", 1}].outcome == Outcome::pass);
  for (const auto& [key, rec] : by) {
    CHECK(rec.turn == 1);
    CHECK(fs::exists(out / rec.attempt_dir / "result.json"));  // attempts/<task>/<sample>/1/
    CHECK(rec.attempt_dir.find("/" + std::to_string(key.second) + "/1") != std::string::npos);
  }

  // pass@k = 1 - C(n-c, k) / C(n, k), averaged over the tasks with n >= k:
  //   gelu_tanh (n 4, c 2): 1/2, 5/6, 1, 1;  film_modulation (n 2, c 1): 1/2, 1.
  //   pass@1 = 0.5, pass@2 = (5/6 + 1) / 2 = 0.917, pass@3 = pass@4 = 1 (gelu_tanh only).
  CHECK(r.out.find(
            "pass@k over 2 task(s), 6 sample(s): pass@1 0.500, pass@2 0.917, pass@3 1.000, pass@4 1.000") !=
        std::string::npos);

  r = run_kforge({"report", out.string()}, dir);
  REQUIRE(r.code == 0);
  const json s = json::parse(slurp(out / "summary.json"));
  const json& pk = s["overall"]["best"]["pass_at_k"];
  REQUIRE(pk.size() == 4);
  CHECK(pk["1"].get<double>() == Approx(0.5));
  CHECK(pk["2"].get<double>() == Approx((5.0 / 6 + 1) / 2));
  CHECK(pk["3"].get<double>() == Approx(1.0));
  CHECK(pk["4"].get<double>() == Approx(1.0));
  const std::string md = slurp(out / "report.md");
  for (const char* h : {"pass@1", "pass@2", "pass@3", "pass@4"}) CHECK(md.find(h) != std::string::npos);
  CHECK(md.find("pass@5") == std::string::npos);

  // Again: every sample is unchanged and skipped; a changed sample is judged again.
  write(k / "activation/gelu_tanh/1/kernel.cpp", gelu);
  r = run_kforge({"eval", "--suite", "kforge-core", "--backend", "cpu", "--profile", "ci", "--no-bench",
                  "--trials", "1", "--kernels", k.string(), "--out", out.string()},
                 dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("skipped 5 unchanged kernel(s)") != std::string::npos);
  // gelu_tanh now n 4, c 3: 3/4, 1, 1, 1; pass@1 = (3/4 + 1/2) / 2 = 0.625.
  CHECK(r.out.find("pass@1 0.625, pass@2 1.000") != std::string::npos);
}

TEST_CASE(
    "kforge eval: every sample of a task whose reference fails is an infra_error; the task is unusable once",
    "[eval_samples][cli]") {
  const fs::path dir = scratch("eval_samples_unusable");
  write(dir / "kb/level1/7_Raises.py", R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("this reference cannot be built")

    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
)");
  for (const char* s : {"0", "1", "2"}) write(dir / "k/level1/7_Raises" / s / "kernel.cpp", kZeros);
  Ran r = run_kforge({"eval", "--suite", (dir / "kb").string(), "--backend", "cpu", "--no-bench", "--trials",
                      "1", "--kernels", (dir / "k").string(), "--out", (dir / "out").string()},
                     dir);
  INFO(r.out << r.err);
  CHECK(r.code == kforge::agent::kExitInfraError);
  const auto recs = kforge::load_attempts(dir / "out").records;
  REQUIRE(recs.size() == 3);
  for (int s = 0; s < 3; ++s) {
    CHECK(recs[static_cast<std::size_t>(s)].sample == s);
    CHECK(recs[static_cast<std::size_t>(s)].outcome == kforge::Outcome::infra_error);
    CHECK(recs[static_cast<std::size_t>(s)].sub_kind == "reference_failed");
    CHECK(recs[static_cast<std::size_t>(s)].message.find("this reference cannot be built") !=
          std::string::npos);
  }
  CHECK(json::parse(slurp(dir / "out/unusable.json")).size() == 1);
  CHECK(r.out.find("1 task(s) unusable") != std::string::npos);
  CHECK(r.out.find("pass@k") == std::string::npos);  // nothing was scored
}
