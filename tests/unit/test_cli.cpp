// [cli] the kforge binary as a user meets it (issue 23 §0, §1): exit codes, an unknown
// subcommand, bad kernels that never abort `eval`, an existing --out, `kforge task`, and
// `kforge suites --profile`. The real binary, the real runner on the cpu backend, ci shapes.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/common/utf8.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"
#include "scripted_server.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using kforge::test::Ran;
using kforge::test::run_kforge;
using kforge::test::slurp;

/// Runs the kforge binary with `args`; stdout and stderr captured through files in `dir`.
void write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

std::string cjk(std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += "\xE4\xB8\xAD";
  return s;
}

}  // namespace

TEST_CASE("kforge: bad arguments exit 2, an unknown subcommand says so", "[cli]") {
  const fs::path dir = scratch("cli_args");
  Ran r = run_kforge({"frob"}, dir);
  CHECK(r.code == 2);
  CHECK(r.err.find("unknown subcommand 'frob'") != std::string::npos);
  CHECK(r.err.find("eval") != std::string::npos);           // the known ones are listed
  r = run_kforge({"eval", "--suite", "kforge-core"}, dir);  // required options missing (CLI11: 106)
  CHECK(r.code == 2);
  r = run_kforge({"eval", "--suite", "kforge-core", "--kernels", ".", "--out", "x", "--trials", "0"}, dir);
  CHECK(r.code == 2);  // out of range (CLI11: 105)
  r = run_kforge({"run", "--no-such-flag"}, dir);
  CHECK(r.code == 2);
  r = run_kforge({"--help"}, dir);
  CHECK(r.code == 0);
  CHECK(r.out.find("task") != std::string::npos);
}

TEST_CASE(
    "kforge eval: a binary kernel and 2 KB of CJK in an error line are records; later tasks are judged; "
    "a re-run judges only changed kernels",
    "[cli]") {
  const fs::path dir = scratch("cli_eval_bytes");
  const fs::path k = dir / "kernels";
  const std::string exemplar = fs::path(KFORGE_TESTS_DIR).parent_path() / "prompts/exemplars/cpu";
  write(k / "activation/gelu_tanh/kernel.cpp", std::string("\x7F"
                                                           "ELF\x02\x01\0\0\xFF\xFE\xC0\x80 kernel",
                                                           19));
  // An error line over 2 KB: `#error` and 2.1 KB of CJK.
  const std::string cjk_kernel = "#include \"kforge/kernel_abi.h\"\n#error " + cjk(700) + "\n";
  write(k / "activation/log_softmax_temperature/kernel.cpp", cjk_kernel);
  write(k / "broadcast/film_modulation/kernel.cpp",
        slurp(fs::path(exemplar) / "broadcast/film_modulation/kernel.cpp"));
  const std::vector<std::string> args{
      "eval",       "--suite",  "kforge-core", "--backend", "cpu",      "--profile", "ci",
      "--no-bench", "--trials", "1",           "--kernels", k.string(), "--out",     (dir / "out").string()};
  Ran r = run_kforge(args, dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  auto recs = kforge::load_attempts(dir / "out").records;
  REQUIRE(recs.size() == 3);
  std::map<std::string, kforge::AttemptRecord> by;
  for (const auto& x : recs) by[x.task] = x;
  CHECK(by["activation/gelu_tanh"].outcome == kforge::Outcome::compile_error);
  CHECK(by["activation/log_softmax_temperature"].outcome == kforge::Outcome::compile_error);
  CHECK(by["broadcast/film_modulation"].outcome == kforge::Outcome::pass);
  for (const auto& x : recs) {
    CHECK(kforge::is_valid_utf8(x.message));
    auto res = json::parse(slurp(dir / "out" / x.attempt_dir / "result.json"));  // parses: valid JSON
    CHECK(res["outcome"] == std::string(kforge::to_string(x.outcome)));
  }
  // gcc escapes the #error text (\U00004e2d) outside a UTF-8 locale, but the feedback quotes the
  // offending source line raw: 2.1 KB of CJK, cut on character boundaries.
  const auto res =
      json::parse(slurp(dir / "out" / by["activation/log_softmax_temperature"].attempt_dir / "result.json"));
  CHECK(res["message"].get<std::string>().find("\xE4\xB8\xAD\xE4\xB8\xAD") != std::string::npos);

  // Again into the same --out: unchanged kernels are skipped (and said so); a changed one is judged.
  write(k / "activation/log_softmax_temperature/kernel.cpp", cjk_kernel + "// edited\n");
  r = run_kforge(args, dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("skipped 2 unchanged kernel(s)") != std::string::npos);
  recs = kforge::load_attempts(dir / "out").records;
  REQUIRE(recs.size() == 4);
  CHECK(recs.back().task == "activation/log_softmax_temperature");
  CHECK(recs.back().source_sha != by["activation/log_softmax_temperature"].source_sha);
}

TEST_CASE("kforge run --out on an existing run refuses (exit 2) and points to --resume", "[cli]") {
  const fs::path dir = scratch("cli_run_exists");
  { kforge::RunDir::create(dir / "run", {{"config", {{"turns", 3}}}}); }
  const std::string before = slurp(dir / "run/manifest.json");
  Ran r = run_kforge({"run", "--suite", "kforge-core", "--backend", "cpu", "--llm", "openai:m", "--base-url",
                      "http://127.0.0.1:9", "--profile", "ci", "--out", (dir / "run").string()},
                     dir);
  CHECK(r.code == 2);
  CHECK(r.err.find("--resume") != std::string::npos);
  CHECK(slurp(dir / "run/manifest.json") == before);  // the old run's options are untouched
}

TEST_CASE("kforge run that ends with episodes paused at an llm_error exits 75 with the last LLM error",
          "[cli]") {
  const fs::path dir = scratch("cli_run_llm");
  write(dir / "script.json", json{{"replies", json::array({{{"fault", "500"}}})}}.dump());
  kforge::test::ScriptedServer srv(dir / "script.json");
  Ran r = run_kforge({"run",
                      "--suite",
                      "kforge-core",
                      "--backend",
                      "cpu",
                      "--llm",
                      "openai:m",
                      "--base-url",
                      srv.url(),
                      "--profile",
                      "ci",
                      "--no-bench",
                      "--no-print-report",
                      "--only",
                      "activation/gelu_tanh",
                      "--llm-retries",
                      "0",
                      "--max-llm-failures",
                      "0",
                      "--out",
                      (dir / "run").string()},
                     dir);
  CHECK(r.code == 75);
  CHECK(r.err.find("paused at an llm_error") != std::string::npos);
  CHECK(r.err.find("Last LLM error (activation/gelu_tanh)") != std::string::npos);
  // Not finished (issue 40 §2): INCOMPLETE in the manifest, summary.json and report.md; the
  // wall time is the invocation's.
  const json m = json::parse(slurp(dir / "run/manifest.json"));
  CHECK(m["complete"] == false);
  CHECK(m["wall_s"].get<double>() > 0);
  CHECK(json::parse(slurp(dir / "run/summary.json"))["complete"] == false);
  CHECK(slurp(dir / "run/report.md").find("INCOMPLETE: this run has not finished") != std::string::npos);
}

TEST_CASE("kforge task prints the prompt's task section: tensor table, tolerances, checks, ABI", "[cli]") {
  const fs::path dir = scratch("cli_task");
  Ran r =
      run_kforge({"task", "kforge-core", "activation/gelu_tanh", "--profile", "ci", "--backend", "cpu"}, dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("## Task `activation/gelu_tanh`") != std::string::npos);
  CHECK(r.out.find("| # | role | name | kind | shape | dtype |") != std::string::npos);
  CHECK(r.out.find("64, 257") != std::string::npos);  // the ci shapes, from the judge's load
  CHECK(r.out.find("atol") != std::string::npos);
  CHECK(r.out.find("kf_forward") != std::string::npos);
  CHECK(r.out.find("typedef struct kf_tensor") != std::string::npos);
  r = run_kforge({"task", "kforge-core", "gelu"}, dir);
  CHECK(r.code == 2);
  CHECK(r.err.find("activation/gelu_tanh") != std::string::npos);  // the nearest ids
}

TEST_CASE("kforge suites --profile ci lists each scaled KernelBench task with its shapes", "[cli]") {
  const fs::path dir = scratch("cli_suites_profile");
  // A KernelBench-layout suite: level1 with a task at its real size and one already small.
  write(dir / "kb/level1/19_ReLU.py", R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
)");
  write(dir / "kb/level1/1_Small.py",
        slurp(fs::path(KFORGE_TESTS_DIR) / "fixtures/kernelbench/level1/19_ReLU.py"));
  Ran r = run_kforge({"suites", "--suite", (dir / "kb").string(), "--profile", "ci"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("level1/19_ReLU") != std::string::npos);
  CHECK(r.out.find("(32, 3072) float32") != std::string::npos);
  CHECK(r.out.find("batch_size 4096->32, dim 393216->3072 (was 6.00 GiB)") != std::string::npos);
  CHECK(r.out.find("(8, 16) float32") != std::string::npos);
}
