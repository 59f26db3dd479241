// [ids] task ids are not paths (issue 38 §2.1) and no task is lost or mixed without a word
// (issue 40 §2, §3): the task-id allow-list, writes that cannot leave their directory
// (common/beneath.hpp) against ids that climb out and links planted inside, and the
// configuration errors of run, eval and compare (exit 2, nothing left behind), incomplete runs
// and the run's wall time in the reports.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/beneath.hpp"
#include "kforge/common/task_id.hpp"
#include "kforge/runs/run_dir.hpp"
#include "run_cmd.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using kforge::test::Ran;
using kforge::test::run_kforge;
using kforge::test::slurp;

namespace {

const fs::path kAdv = fs::path(KFORGE_TESTS_DIR) / "data/adversarial_suites";
const fs::path kGenerations = fs::path(KFORGE_TESTS_DIR) / "data/kernelbench_generations";
const fs::path kKernelBench = fs::path(KFORGE_TESTS_DIR) / "fixtures/kernelbench";
const fs::path kExemplars = fs::path(KFORGE_TESTS_DIR).parent_path() / "prompts/exemplars/cpu";

void write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Every regular file below `dir` (links not followed), as paths relative to it.
std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file() && !it->is_symlink())
      out.push_back(it->path().lexically_relative(dir).string());
  return out;
}

}  // namespace

TEST_CASE("task ids: real ids of every format pass, paths and odd characters are refused", "[ids]") {
  using kforge::task_id_problem;
  for (const char* ok : {"level1/19_ReLU", "level3/44_MiniGPTBlock", "arch/resnet18", "fuse/conv_relu",
                         "T/relu", "G/matrix_reduction", "aten.add.Tensor", "aten._softmax.default",
                         "aten.sum.dim_IntList", "activation/gelu_tanh", "a-b.c_d"})
    CHECK_FALSE(task_id_problem(ok));
  CHECK(*task_id_problem("") == "is empty");
  CHECK(*task_id_problem("/etc/passwd") == "is an absolute path");
  CHECK(has(*task_id_problem("../../escape"), "'..' component"));
  CHECK(has(*task_id_problem("level1/19_x/../../../../escape"), "'..' component"));
  CHECK(has(*task_id_problem("a/./b"), "'.' component"));
  CHECK(has(*task_id_problem("a//b"), "empty component"));
  CHECK(has(*task_id_problem("a/"), "empty component"));
  CHECK(has(*task_id_problem("a b"), "' '"));
  CHECK(has(*task_id_problem("a\\b"), "'\\'"));
  CHECK(has(*task_id_problem(std::string("a\nb")), "byte 0x0a"));
  CHECK(has(*task_id_problem(std::string("a\0b", 3)), "byte 0x00"));
  CHECK(has(*task_id_problem(std::string(256, 'a')), "longer than 255"));
  CHECK_THROWS_WITH(kforge::require_valid_task_id("../x"), Catch::Contains("task id '../x'"));
  CHECK(kforge::closest_name("level1/20_LeakyRelu", {"level1/19_ReLU", "level1/20_LeakyReLU", "x"}) ==
        "level1/20_LeakyReLU");
  CHECK(kforge::closest_name("x", {}).empty());
}

TEST_CASE("beneath: writes and removals never follow a link planted below the root", "[ids]") {
  const fs::path dir = scratch("ids_beneath");
  const fs::path root = dir / "root", outside = dir / "outside";
  fs::create_directories(root);
  fs::create_directories(outside / "t");
  write(outside / "t/kernel.cu", "keep");

  kforge::write_file_beneath(root, "a/b/kernel.cu", "x");
  CHECK(slurp(root / "a/b/kernel.cu") == "x");
  kforge::write_file_beneath(root, "a/b/kernel.cu", "y");  // replaced atomically
  CHECK(slurp(root / "a/b/kernel.cu") == "y");
  CHECK(kforge::remove_file_beneath(root, "a/b/kernel.cu"));
  CHECK_FALSE(kforge::remove_file_beneath(root, "a/b/kernel.cu"));
  CHECK_FALSE(kforge::remove_file_beneath(root, "no/such/kernel.cu"));

  // A folder below the root that is a link out: refused for write, mkdir and remove.
  fs::create_directory_symlink(outside, root / "lnk");
  CHECK_THROWS_WITH(kforge::write_file_beneath(root, "lnk/t/kernel.cu", "evil"),
                    Catch::Contains("symbolic link"));
  CHECK_THROWS_WITH(kforge::remove_file_beneath(root, "lnk/t/kernel.cu"), Catch::Contains("symbolic link"));
  CHECK_THROWS(kforge::create_directories_beneath(root, "lnk/new"));
  // A file that is a link out: replaced by the new file, its target untouched.
  fs::create_symlink(outside / "t/kernel.cu", root / "file_link");
  kforge::write_file_beneath(root, "file_link", "new");
  CHECK_FALSE(fs::is_symlink(root / "file_link"));
  CHECK(slurp(root / "file_link") == "new");
  fs::create_symlink(outside / "t/kernel.cu", root / "file_link2");
  CHECK(kforge::remove_file_beneath(root, "file_link2"));  // the link itself
  CHECK(slurp(outside / "t/kernel.cu") == "keep");
  CHECK(files_below(outside) == std::vector<std::string>{"t/kernel.cu"});
  // Paths that climb are refused before anything is opened.
  CHECK_THROWS_AS(kforge::write_file_beneath(root, "../outside/x", "evil"), std::invalid_argument);
  CHECK_THROWS_AS(kforge::write_file_beneath(root, "/tmp/x", "evil"), std::invalid_argument);
  CHECK_FALSE(fs::exists(outside / "x"));
}

TEST_CASE("RunDir: an attempt file is never written through a link planted in the run", "[ids]") {
  const fs::path dir = scratch("ids_rundir");
  fs::create_directories(dir / "outside");
  auto run = kforge::RunDir::create(dir / "run", {{"command", "run"}});
  fs::create_directory_symlink(dir / "outside", dir / "run/attempts/act");
  CHECK_THROWS_WITH(run.write_attempt_file("act/relu", 0, 1, "kernel.cpp", "evil"),
                    Catch::Contains("symbolic link"));
  CHECK_THROWS_AS(run.write_attempt_file("../../escape", 0, 1, "kernel.cpp", "evil"), std::invalid_argument);
  CHECK(files_below(dir / "outside").empty());
  CHECK_FALSE(fs::exists(dir / "escape"));
}

TEST_CASE("load_suite refuses a task id that is a path, in suite.json and in a folder layout", "[ids]") {
  CHECK_THROWS_WITH(kforge::load_suite(kAdv / "task_id_escape"),
                    Catch::Contains("suite.json: tasks[0].id: task id '../../escape' has a '..' component"));
  const fs::path dir = scratch("ids_mkb");
  write(dir / "reference/activation/bad name.py", slurp(kAdv / "task_id_escape/task.py"));
  CHECK_THROWS_WITH(kforge::load_suite(dir), Catch::Contains("bad name.py: task id 'activation/bad name'") &&
                                                 Catch::Contains("contains the character ' '"));
}

TEST_CASE("eval and import-kernelbench with an escaping task id: exit 2, nothing written or deleted",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_cli_escape");
  write(dir / "keep/escape", "keep");
  Ran r = run_kforge({"eval", "--suite", (kAdv / "task_id_escape").string(), "--kernels", dir.string(),
                      "--out", (dir / "a/b/out").string()},
                     dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "tasks[0].id: task id '../../escape' has a '..' component"));
  CHECK_FALSE(fs::exists(dir / "a"));
  r = run_kforge({"import-kernelbench", "--suite", (kAdv / "task_id_escape_kb").string(), "--generations",
                  kGenerations.string(), "--out", (dir / "k/l/m/out").string()},
                 dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "tasks[0].id: task id 'level1/19_x/../../../../escape'"));
  CHECK_FALSE(fs::exists(dir / "k"));
  CHECK(slurp(dir / "keep/escape") == "keep");
}

TEST_CASE("import-kernelbench: a link planted inside --out is refused, its target untouched", "[ids][cli]") {
  const fs::path dir = scratch("ids_cli_import_link");
  // level 1 problem 19 sample 0 does not convert: its stale kernel would be deleted.
  write(dir / "gen1/level_1_problem_19_sample_0_kernel.py",
        slurp(kGenerations / "level_1_problem_19_sample_0_kernel.py"));
  write(dir / "outside/19_ReLU/0/kernel.cu", "keep");
  fs::create_directories(dir / "out1");
  fs::create_directory_symlink(dir / "outside", dir / "out1/level1");
  Ran r = run_kforge({"import-kernelbench", "--suite", kKernelBench.string(), "--generations",
                      (dir / "gen1").string(), "--out", (dir / "out1").string()},
                     dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "'level1' is a symbolic link or not a folder: refused"));
  CHECK(slurp(dir / "outside/19_ReLU/0/kernel.cu") == "keep");
  // level 2 problem 5 converts: its kernel must not land outside.
  write(dir / "gen2/level_2_problem_5_sample_0_kernel.py",
        slurp(kGenerations / "level_2_problem_5_sample_0_kernel.py"));
  fs::create_directories(dir / "outside2");
  fs::create_directories(dir / "out2");
  fs::create_directory_symlink(dir / "outside2", dir / "out2/level2");
  r = run_kforge({"import-kernelbench", "--suite", kKernelBench.string(), "--generations",
                  (dir / "gen2").string(), "--out", (dir / "out2").string()},
                 dir);
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(files_below(dir / "outside2").empty());
  CHECK(files_below(dir / "outside") == std::vector<std::string>{"19_ReLU/0/kernel.cu"});
}

TEST_CASE("run: an unknown --tasks id, an unknown --profile, --out with --resume: exit 2, no directory",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_cli_run_config");
  const std::vector<std::string> base{"run",   "--suite",  "kforge-core", "--backend",         "cpu",
                                      "--llm", "openai:m", "--base-url",  "http://127.0.0.1:9"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  Ran r = run_kforge(with({"--tasks", "activation/gelu_tanhh", "--out", (dir / "r1").string()}), dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "--tasks activation/gelu_tanhh (closest: activation/gelu_tanh): no such task"));
  CHECK_FALSE(fs::exists(dir / "r1"));
  r = run_kforge(with({"--profile", "CI", "--out", (dir / "r2").string()}), dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "--profile CI: no selected task of suite kforge-core defines it"));
  CHECK_FALSE(fs::exists(dir / "r2"));
  { kforge::RunDir::create(dir / "old", {{"command", "run"}, {"config", {{"turns", 1}}}}); }
  r = run_kforge({"run", "--resume", (dir / "old").string(), "--out", (dir / "r3").string()}, dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "both given"));
  CHECK_FALSE(fs::exists(dir / "r3"));
}

TEST_CASE("eval: a kernel folder naming no task, an unknown --profile, --out into a run: exit 2",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_cli_eval_config");
  write(dir / "k/broadcast/film_modulation/kernel.cpp",
        slurp(kExemplars / "broadcast/film_modulation/kernel.cpp"));
  write(dir / "k2/activation/gelu_tanhh/1/kernel.cpp", "typo");
  auto eval = [&](const std::string& kernels, const fs::path& out, std::vector<std::string> extra) {
    std::vector<std::string> a{"eval",      "--suite", "kforge-core", "--backend", "cpu",
                               "--kernels", kernels,   "--out",       out.string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_kforge(a, dir);
  };
  Ran r = eval((dir / "k2").string(), dir / "o1", {});
  CHECK(r.code == 2);
  CHECK(has(r.err, "folder activation/gelu_tanhh (closest: activation/gelu_tanh) names no task"));
  CHECK_FALSE(fs::exists(dir / "o1"));
  r = eval((dir / "k").string(), dir / "o2", {"--profile", "CI"});
  CHECK(r.code == 2);
  CHECK(has(r.err, "--profile CI: no selected task"));
  CHECK_FALSE(fs::exists(dir / "o2"));
  { kforge::RunDir::create(dir / "run", {{"command", "run"}, {"config", {{"turns", 1}}}}); }
  const std::string before = slurp(dir / "run/manifest.json");
  r = eval((dir / "k").string(), dir / "run", {"--profile", "ci"});
  CHECK(r.code == 2);
  CHECK(has(r.err, "it is a `kforge run` directory, not an eval's"));
  CHECK(slurp(dir / "run/manifest.json") == before);
  CHECK_FALSE(fs::exists(dir / "run/attempts/broadcast"));
}

TEST_CASE("eval --out into an eval of other result-changing options refuses; the run's record says complete",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_cli_eval_mix");
  write(dir / "k/broadcast/film_modulation/kernel.cpp",
        slurp(kExemplars / "broadcast/film_modulation/kernel.cpp"));
  std::vector<std::string> args{"eval",        "--suite",
                                "kforge-core", "--backend",
                                "cpu",         "--profile",
                                "ci",          "--no-bench",
                                "--trials",    "1",
                                "--kernels",   (dir / "k").string(),
                                "--out",       (dir / "out").string()};
  Ran r = run_kforge(args, dir);
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const json m = json::parse(slurp(dir / "out/manifest.json"));
  CHECK(m["complete"] == true);
  CHECK(m["wall_s"].get<double>() > 0);
  args[9] = "2";  // --trials 2
  r = run_kforge(args, dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "--trials: this eval says 2, the directory's results were judged with 1 (config.trials)"));
  args[9] = "1";
  args[6] = "small";  // --profile small
  r = run_kforge(args, dir);
  CHECK(r.code == 2);
  CHECK(has(r.err, "--profile: this eval says \"small\""));
  CHECK(kforge::load_attempts(dir / "out").records.size() == 1);
}

namespace {
/// A finished-looking run of one passing attempt, with `config` and `extra` in its manifest.
void synth_run(const fs::path& dir, const json& config, const json& extra) {
  json manifest{{"command", "run"}, {"config", config}};
  for (const auto& [k, v] : extra.items()) manifest[k] = v;
  auto run = kforge::RunDir::create(dir, manifest);
  kforge::AttemptRecord r;
  r.task = "act/relu";
  r.backend = "cpu";
  r.model = "m";
  r.outcome = kforge::Outcome::pass;
  r.started_at = "2026-11-22T13:50:00.000Z";
  r.finished_at = "2026-11-22T13:50:29.000Z";
  r.attempt_dir = kforge::attempt_rel_path(r.task, 0, 1).string();
  run.append(r);
}
}  // namespace

TEST_CASE("report: an unfinished run is marked INCOMPLETE; wall time is the run's, summed over resumes",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_report_incomplete");
  synth_run(dir / "run", {{"profile", "ci"}},
            {{"complete", false}, {"wall_s", 96.0}, {"resumes", json::array({1})}});
  Ran r = run_kforge({"report", (dir / "run").string()}, dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string md = slurp(dir / "run/report.md");
  CHECK(has(md, "(INCOMPLETE)"));
  CHECK(has(md, "INCOMPLETE: this run has not finished"));
  CHECK(has(md, "Wall time 1 min 36 s (the run's, from its start, summed over 2 invocations)"));
  const json s = json::parse(slurp(dir / "run/summary.json"));
  CHECK(s["complete"] == false);
  CHECK(s["wall_s"] == 96.0);
  CHECK(has(slurp(dir / "run/report.html"), "INCOMPLETE: this run has not finished"));
  synth_run(dir / "done", {{"profile", "ci"}}, {{"complete", true}, {"wall_s", 10.0}});
  REQUIRE(run_kforge({"report", (dir / "done").string()}, dir).code == 0);
  CHECK_FALSE(has(slurp(dir / "done/report.md"), "INCOMPLETE"));
  CHECK(json::parse(slurp(dir / "done/summary.json"))["complete"] == true);
}

TEST_CASE("compare marks runs not measured alike and writes its page beside the runs or to --out",
          "[ids][cli]") {
  const fs::path dir = scratch("ids_compare");
  synth_run(dir / "a", {{"profile", "ci"}, {"llm", "openai:x"}}, {{"complete", true}});
  synth_run(dir / "b", {{"profile", "default"}, {"llm", "openai:y"}}, {{"complete", false}});
  const fs::path here = fs::current_path() / "compare.html";  // the old default
  const bool was_here = fs::exists(here);
  Ran r = run_kforge({"compare", (dir / "a").string(), (dir / "b").string()}, dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.err, "warning: profile differs: ci in a, default in b"));
  CHECK(has(r.err, "b has not finished (INCOMPLETE)"));
  CHECK_FALSE(has(r.err, "llm differs"));  // the model is what a comparison varies
  CHECK(has(r.out, "**Warning: the runs are not measured alike.**"));
  CHECK(fs::exists(dir / "compare-a-vs-b.html"));
  CHECK(has(slurp(dir / "compare-a-vs-b.html"), "kf-not-alike"));
  CHECK(fs::exists(here) == was_here);
  r = run_kforge({"compare", (dir / "a").string(), (dir / "b").string(), "--out", (dir / "cmp").string()},
                 dir);
  REQUIRE(r.code == 0);
  CHECK(fs::exists(dir / "cmp/compare.html"));
  r = run_kforge({"compare", (dir / "a").string(), (dir / "b").string(), "--out", "x", "--html", "y"}, dir);
  CHECK(r.code == 2);
}
