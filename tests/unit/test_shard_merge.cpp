// [shard] the episode selector of `kforge run --shard K/N`; [merge] `kforge merge` of the
// shards' runs (runs/shard.hpp, runs/merge.hpp), on run directories written with RunDir.
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "catch.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/merge.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/shard.hpp"
#include "scratch_dir.hpp"

using namespace kforge;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::vector<EpisodeKey> keys_of(int tasks, int samples, const std::string& prefix = "cat/task_") {
  std::vector<EpisodeKey> k;
  for (int t = 0; t < tasks; ++t)
    for (int s = 0; s < samples; ++s) k.push_back({prefix + std::to_string(t), s});
  return k;
}

std::set<std::pair<std::string, int>> as_set(const std::vector<EpisodeKey>& ks) {
  std::set<std::pair<std::string, int>> out;
  for (const auto& k : ks) out.insert({k.task, k.sample});
  return out;
}

}  // namespace

TEST_CASE("parse_shard accepts K/N with 0 <= K < N and nothing else", "[shard]") {
  CHECK(parse_shard("0/1") == Shard{0, 1});
  CHECK(parse_shard("3/8") == Shard{3, 8});
  CHECK(to_string(Shard{3, 8}) == "3/8");
  for (const char* bad :
       {"", "1", "8/8", "1/0", "-1/2", "+1/2", "1/-2", " 1/2", "1/2 ", "1/2x", "a/b", "1//2", "0/1000001"})
    CHECK_FALSE(parse_shard(bad).has_value());
}

TEST_CASE("shard_of is the documented hash: SHA-256(task NUL sample), first 8 bytes, mod N", "[shard]") {
  // Pinned with Python: int(hashlib.sha256(b"activation/gelu_tanh\0" b"0").hexdigest()[:16], 16).
  CHECK(episode_hash("activation/gelu_tanh", 0) == 0xd51f4712f48641b6ULL);
  CHECK(episode_hash("activation/gelu_tanh", 1) == 0xdcb3802bc0b341c8ULL);
  CHECK(shard_of("activation/gelu_tanh", 0, 3) == 1);
  CHECK(shard_of("activation/gelu_tanh", 1, 3) == 0);
  CHECK(shard_of("level1/19_ReLU", 7, 3) == 2);
  CHECK_THROWS_AS(shard_of("x", 0, 0), std::invalid_argument);
}

TEST_CASE("the shards of one N partition the episodes: every key in exactly one, order kept", "[shard]") {
  const auto keys = keys_of(40, 5);
  for (int n : {1, 2, 3, 7, 64}) {
    INFO("N = " << n);
    std::map<std::pair<std::string, int>, int> owner;
    std::size_t total = 0;
    for (int k = 0; k < n; ++k) {
      auto part = select_shard(keys, {k, n});
      total += part.size();
      for (const auto& e : part) {
        auto [it, fresh] = owner.emplace(std::pair{e.task, e.sample}, k);
        CHECK(fresh);  // in no other shard
      }
      // The subset keeps the list's order.
      std::size_t pos = 0;
      for (const auto& e : part) {
        while (pos < keys.size() && !(keys[pos] == e)) ++pos;
        CHECK(pos < keys.size());
      }
    }
    CHECK(total == keys.size());
    CHECK(owner.size() == keys.size());
  }
  // 200 keys over 2 shards: neither is empty (the split is statistical, not by position).
  CHECK(select_shard(keys, {0, 2}).size() > 50);
  CHECK(select_shard(keys, {1, 2}).size() > 50);
}

TEST_CASE("shard membership depends on the key alone: deterministic, and new tasks move nothing", "[shard]") {
  const auto keys = keys_of(30, 3);
  const Shard s{1, 4};
  CHECK(select_shard(keys, s) == select_shard(keys, s));
  // More tasks, in front and behind, and the list reversed: the old keys keep their shards.
  auto more = keys_of(10, 3, "new/task_");
  more.insert(more.end(), keys.rbegin(), keys.rend());
  auto extra = keys_of(10, 4, "zzz/");
  more.insert(more.end(), extra.begin(), extra.end());
  auto old_set = as_set(keys);
  std::set<std::pair<std::string, int>> picked_old;
  for (const auto& k : select_shard(more, s))
    if (old_set.count({k.task, k.sample})) picked_old.insert({k.task, k.sample});
  CHECK(picked_old == as_set(select_shard(keys, s)));
}

namespace {

json config_for(const std::string& shard, int samples = 2) {
  return {{"suite", "kforge-core"}, {"backend", "cpu"}, {"llm", "openai:scripted"},
          {"samples", samples},     {"turns", 2},       {"shard", shard}};
}

AttemptRecord rec(const std::string& task, int sample, int turn, Outcome o) {
  AttemptRecord r;
  r.task = task;
  r.sample = sample;
  r.turn = turn;
  r.outcome = o;
  r.backend = "cpu";
  r.model = "scripted";
  r.attempt_dir = attempt_rel_path(task, sample, turn).string();
  return r;
}

/// A task id owned by shard k of n, for sample `sample`.
std::string task_in(int k, int n, int sample, int skip = 0) {
  for (int i = 0;; ++i) {
    std::string t = "cat/t" + std::to_string(i);
    if (shard_of(t, sample, n) == k && skip-- == 0) return t;
  }
}

/// Writes a run with `records` (and a kernel.cpp per attempt naming its key) at dir.
void write_run(const fs::path& dir, const json& config, const std::vector<AttemptRecord>& records,
               const json& unusable = nullptr) {
  RunDir run = RunDir::create(dir, {{"command", "run"}, {"config", config}, {"runner", {{"device", "cpu"}}}});
  for (const auto& r : records) {
    run.write_attempt_file(r.task, r.sample, r.turn, "kernel.cpp",
                           "// " + r.task + " " + std::to_string(r.sample) + " " + std::to_string(r.turn) +
                               " " + std::string(to_string(r.outcome)) + "\n");
    run.append(r);
  }
  if (!unusable.is_null()) write_file(dir / "unusable.json", unusable.dump());
}

std::map<AttemptKey, Outcome> outcomes(const fs::path& run) {
  std::map<AttemptKey, Outcome> m;
  for (const auto& r : load_attempts(run).records) {
    CHECK(m.count(key_of(r)) == 0);  // one record per key
    m[key_of(r)] = r.outcome;
  }
  return m;
}

}  // namespace

TEST_CASE("merge: two shards become one run; files, unusable.json and the manifest carried over", "[merge]") {
  fs::path d = scratch("merge_two");
  const std::string a = task_in(0, 2, 0), b = task_in(1, 2, 0), b1 = task_in(1, 2, 1);
  write_run(d / "s0", config_for("0/2"), {rec(a, 0, 1, Outcome::compile_error), rec(a, 0, 2, Outcome::pass)},
            json{{"cat/bad", "no Model"}});
  write_run(d / "s1", config_for("1/2"),
            {rec(b, 0, 1, Outcome::pass), rec(b1, 1, 1, Outcome::output_mismatch)}, json::object());
  MergeResult r = merge_runs(d / "out", {d / "s1", d / "s0"});
  REQUIRE(r.ok());
  CHECK(r.stats.inputs == 2);
  CHECK(r.stats.records_read == 4);
  CHECK(r.stats.attempts == 4);
  CHECK(r.stats.duplicates == 0);
  CHECK(r.stats.missing_shards.empty());
  auto o = outcomes(d / "out");
  CHECK(o == std::map<AttemptKey, Outcome>{{{a, 0, 1}, Outcome::compile_error},
                                           {{a, 0, 2}, Outcome::pass},
                                           {{b, 0, 1}, Outcome::pass},
                                           {{b1, 1, 1}, Outcome::output_mismatch}});
  CHECK(read_file(d / "out" / attempt_rel_path(a, 0, 2) / "kernel.cpp") == "// " + a + " 0 2 pass\n");
  CHECK(read_file(d / "out" / attempt_rel_path(b1, 1, 1) / "kernel.cpp") ==
        "// " + b1 + " 1 1 output_mismatch\n");
  auto m = json::parse(read_file(d / "out/manifest.json"));
  CHECK(m["config"]["shard"] == "0/1");
  CHECK(m["config"]["samples"] == 2);
  REQUIRE(m["merged_from"].size() == 2);
  CHECK(m["merged_from"][0]["shard"] == "1/2");
  CHECK(m["merged_from"][1]["records"] == 2);
  CHECK(json::parse(read_file(d / "out/unusable.json")) == json{{"cat/bad", "no Model"}});
  // The merged run is a run: it can be opened to resume (unsharded), and the inputs are untouched.
  CHECK(RunDir::open_for_resume(d / "out").attempt_count() == 4);
  CHECK(load_attempts(d / "s0").records.size() == 2);
}

TEST_CASE("merge: duplicate keys are de-duplicated; a judged attempt supersedes an llm_error", "[merge]") {
  fs::path d = scratch("merge_dups");
  const std::string a = task_in(0, 2, 0), c = task_in(0, 2, 0, 1);
  // Within one run the later record of a key supersedes (resume asked the llm_error turn again).
  write_run(d / "s0", config_for("0/2"),
            {rec(a, 0, 1, Outcome::llm_error), rec(a, 0, 1, Outcome::compile_error),
             rec(c, 0, 1, Outcome::pass), rec(c, 0, 2, Outcome::infra_error)});
  // A copy of the same shard: every record identical, dropped as duplicates.
  fs::copy(d / "s0", d / "s0copy", fs::copy_options::recursive);
  MergeResult r = merge_runs(d / "out", {d / "s0", d / "s0copy"});
  REQUIRE(r.ok());
  CHECK(r.stats.records_read == 8);
  CHECK(r.stats.attempts == 3);
  CHECK(r.stats.superseded == 2);  // the llm_error of a, twice (once per copy)
  CHECK(r.stats.duplicates == 3);
  CHECK(r.stats.missing_shards == std::vector<int>{1});
  CHECK(json::parse(read_file(d / "out/manifest.json"))["missing_shards"] == json{1});
  auto o = outcomes(d / "out");
  CHECK(o.at({a, 0, 1}) == Outcome::compile_error);
  CHECK(o.at({c, 0, 2}) == Outcome::infra_error);

  // Across runs: a model outcome supersedes an unjudged record in either order.
  write_run(d / "later", config_for("0/2"),
            {rec(c, 0, 2, Outcome::output_mismatch), rec(a, 0, 1, Outcome::llm_error)});
  for (bool later_first : {false, true}) {
    fs::remove_all(d / "out2");
    std::vector<fs::path> in{d / "s0", d / "later"};
    if (later_first) std::swap(in[0], in[1]);
    MergeResult r2 = merge_runs(d / "out2", in);
    REQUIRE(r2.ok());
    auto o2 = outcomes(d / "out2");
    CHECK(o2.at({c, 0, 2}) == Outcome::output_mismatch);
    CHECK(o2.at({a, 0, 1}) == Outcome::compile_error);
    CHECK(read_file(d / "out2" / attempt_rel_path(c, 0, 2) / "kernel.cpp") ==
          "// " + c + " 0 2 output_mismatch\n");
  }
}

TEST_CASE("merge: refusals name their kind and field, and write nothing", "[merge]") {
  fs::path d = scratch("merge_refused");
  const std::string a = task_in(0, 2, 0), b = task_in(1, 2, 0);
  write_run(d / "s0", config_for("0/2"), {rec(a, 0, 1, Outcome::pass)});
  write_run(d / "s1", config_for("1/2"), {rec(b, 0, 1, Outcome::pass)});

  auto refused = [&](std::vector<fs::path> in, MergeErrorKind kind, const std::string& field) {
    fs::remove_all(d / "out");
    MergeResult r = merge_runs(d / "out", in);
    REQUIRE_FALSE(r.ok());
    INFO(r.error->message);
    CHECK(r.error->kind == kind);
    CHECK(r.error->field == field);
    CHECK_FALSE(fs::exists(d / "out"));
    return r.error->message;
  };

  write_run(d / "samples3", config_for("1/2", 3), {});
  std::string msg = refused({d / "s0", d / "samples3"}, MergeErrorKind::config_mismatch, "config.samples");
  CHECK_THAT(msg, Catch::Contains("config.samples differs"));
  CHECK_THAT(msg, Catch::Contains((d / "samples3").string() + " has 3"));

  json no_turns = config_for("1/2");
  no_turns.erase("turns");
  write_run(d / "noturns", no_turns, {});
  CHECK_THAT(refused({d / "s0", d / "noturns"}, MergeErrorKind::config_mismatch, "config.turns"),
             Catch::Contains("(absent)"));

  // An option the manifests mark operational (option_rules, from `kforge run`'s table) may
  // differ between shards; one that changes results may not.
  json ops = config_for("1/2");
  ops["llm_concurrency"] = 112;
  RunDir::create(d / "ops",
                 {{"command", "run"}, {"config", ops}, {"option_rules", {{"llm_concurrency", "free"}}}});
  fs::remove_all(d / "out");
  CHECK(merge_runs(d / "out", {d / "s0", d / "ops"}).ok());
  ops["trials"] = 3;
  RunDir::create(d / "ops3",
                 {{"command", "run"}, {"config", ops}, {"option_rules", {{"llm_concurrency", "free"}}}});
  refused({d / "s0", d / "ops3"}, MergeErrorKind::config_mismatch, "config.trials");

  write_run(d / "n3", config_for("1/3"), {});
  CHECK_THAT(refused({d / "s0", d / "n3"}, MergeErrorKind::shard_mismatch, "config.shard"),
             Catch::Contains("1/3"));

  write_run(d / "badshard", config_for("2/2"), {});
  refused({d / "badshard"}, MergeErrorKind::shard_mismatch, "config.shard");

  // A record of shard 1's episode inside shard 0's run.
  write_run(d / "stray", config_for("0/2"), {rec(b, 0, 1, Outcome::pass)});
  CHECK_THAT(refused({d / "stray"}, MergeErrorKind::shard_mismatch, "attempts.jsonl"),
             Catch::Contains("not in the run's shard 0/2"));

  // The same attempt judged differently in two runs.
  write_run(d / "s0again", config_for("0/2"), {rec(a, 0, 1, Outcome::output_mismatch)});
  msg = refused({d / "s0", d / "s0again"}, MergeErrorKind::conflicting_attempt, "attempts.jsonl");
  CHECK_THAT(msg, Catch::Contains("turn 1 was judged in two runs"));

  fs::create_directories(d / "plain");
  refused({d / "s0", d / "plain"}, MergeErrorKind::not_a_run, "manifest.json");
  refused({}, MergeErrorKind::no_inputs, "");

  // A run still being written (its writer holds the lock).
  {
    RunDir live = RunDir::open_for_resume(d / "s1");
    CHECK_THAT(refused({d / "s0", d / "s1"}, MergeErrorKind::run_locked, ".lock"),
               Catch::Contains("being written"));
  }

  // OUT is not empty.
  fs::create_directories(d / "full");
  write_file(d / "full/x", "x");
  MergeResult r = merge_runs(d / "full", {d / "s0", d / "s1"});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error->kind == MergeErrorKind::output_not_empty);
  CHECK(read_file(d / "full/x") == "x");
}
