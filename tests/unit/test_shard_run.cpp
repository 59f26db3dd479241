// [agent][shard] `kforge run --shard K/N` and `kforge merge` end to end, without Slurm: the real
// kforge binary against a kforge-scripted-llm started here, the cpu backend, ci shapes. (The
// slurm_sweep ctest runs the same through a real single-node Slurm cluster.)
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/merge.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/shard.hpp"
#include "scripted_server.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using kforge::test::spawn;

int wait_exit(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const std::string kKforge = std::string(KFORGE_BUILD_DIR) + "/agent/kforge";

std::vector<std::string> run_args(const std::string& url, const fs::path& out,
                                  std::vector<std::string> extra) {
  std::vector<std::string> a{kKforge,
                             "run",
                             "--suite=kforge-core",
                             "--backend=cpu",
                             "--llm=openai:scripted",
                             "--base-url=" + url,
                             "--profile=ci",
                             "--no-bench",
                             "--profiler=none",
                             "--no-print-report",
                             "--tasks=activation/gelu_tanh,activation/mish,activation/swiglu,loss/huber_mean",
                             "--samples=2",
                             "--turns=2",
                             "--trials=2",
                             "--out=" + out.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

/// (outcome, prompt hash, source hash) per (task, sample, turn).
using Seen = std::map<std::tuple<std::string, int, int>, std::tuple<std::string, std::string, std::string>>;
Seen seen(const fs::path& run) {
  Seen s;
  for (const auto& r : kforge::load_attempts(run).records)
    s[{r.task, r.sample, r.turn}] = {std::string(kforge::to_string(r.outcome)), r.prompt_sha, r.source_sha};
  return s;
}

}  // namespace

TEST_CASE("kforge run --shard: the shards' runs merged equal the unsharded run; resume keeps the shard",
          "[agent][shard]") {
  const fs::path dir = fs::temp_directory_path() / ("kforge_shard_run_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // huber_mean's sample 0 gets the shipped kernel (a pass); everything else no code.
  const json demo = json::parse(kforge::read_file(fs::path(KFORGE_TESTS_DIR) / "data/scripted/demo.json"));
  json script{{"default", {{"content", "no code here"}}}, {"replies", json::array()}};
  for (const auto& r : demo["replies"])
    if (r["task"] == "loss/huber_mean")
      script["replies"].push_back({{"task", "loss/huber_mean"}, {"sample", 0}, {"content", r["content"]}});
  REQUIRE(script["replies"].size() == 1);
  std::ofstream(dir / "script.json") << script.dump();
  kforge::test::ScriptedServer srv(dir / "script.json");

  pid_t p0 = spawn(run_args(srv.url(), dir / "s0", {"--shard", "0/2"}), -1);
  pid_t p1 = spawn(run_args(srv.url(), dir / "s1", {"--shard", "1/2"}), -1);
  pid_t pa = spawn(run_args(srv.url(), dir / "all", {}), -1);
  REQUIRE(wait_exit(p0) == 0);
  REQUIRE(wait_exit(p1) == 0);
  REQUIRE(wait_exit(pa) == 0);

  for (int k : {0, 1}) {
    const fs::path s = dir / ("s" + std::to_string(k));
    CHECK(json::parse(kforge::read_file(s / "manifest.json"))["config"]["shard"] == std::to_string(k) + "/2");
    for (const auto& r : kforge::load_attempts(s).records) CHECK(kforge::shard_of(r.task, r.sample, 2) == k);
  }
  const Seen all = seen(dir / "all");
  REQUIRE(all.size() == 4 * 2 * 2 - 1);  // huber_mean sample 0 passes at turn 1; swiglu spans both shards
  CHECK(std::get<0>(all.at({"loss/huber_mean", 0, 1})) == "pass");

  kforge::MergeResult m = kforge::merge_runs(dir / "merged", {dir / "s0", dir / "s1"});
  REQUIRE(m.ok());
  CHECK(m.stats.attempts == all.size());
  CHECK(seen(dir / "merged") == all);  // outcomes, prompts (history) and sources, key by key

  // The CLI: merge then report; shards of different N are refused, naming the field.
  REQUIRE(wait_exit(spawn(
              {kKforge, "merge", (dir / "merged2").string(), (dir / "s1").string(), (dir / "s0").string()},
              -1)) == 0);
  int out = ::open((dir / "report.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(wait_exit(spawn({kKforge, "report", (dir / "merged2").string()}, out)) == 0);
  ::close(out);
  CHECK(json::parse(kforge::read_file(dir / "merged2/summary.json"))["overall"]["best"] ==
        json::parse(kforge::read_file(dir / "all/summary.json"))["overall"]["best"]);
  CHECK(wait_exit(spawn(
            {kKforge, "merge", (dir / "merged3").string(), (dir / "s0").string(), (dir / "all").string()},
            -1)) == 2);
  CHECK_FALSE(fs::exists(dir / "merged3"));

  // A bare --resume keeps the recorded shard and has nothing left to do; another shard is refused.
  const auto before = kforge::load_attempts(dir / "s0").records.size();
  REQUIRE(wait_exit(spawn({kKforge, "run", "--resume", (dir / "s0").string(), "--base-url", srv.url(),
                           "--no-print-report"},
                          -1)) == 0);
  CHECK(kforge::load_attempts(dir / "s0").records.size() == before);
  CHECK(json::parse(kforge::read_file(dir / "s0/manifest.json"))["config"]["shard"] == "0/2");
  CHECK(wait_exit(
            spawn({kKforge, "run", "--resume", (dir / "s0").string(), "--shard", "1/2", "--no-print-report"},
                  -1)) == 2);
  fs::remove_all(dir);
}
