// [agent] end-to-end tests of `kforge run`: the real kforge binary, real HTTP to a
// kforge-scripted-llm started here, the cpu backend through the real kforge-runner, ci shapes.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/runs/run_dir.hpp"
#include "scripted_server.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("kforge_agent_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

using kforge::test::spawn;
using Server = kforge::test::ScriptedServer;

std::vector<std::string> run_args(const std::string& url, const fs::path& out,
                                  std::vector<std::string> extra) {
  std::vector<std::string> a{std::string(KFORGE_BUILD_DIR) + "/agent/kforge",
                             "run",
                             "--suite",
                             "kforge-core",
                             "--backend",
                             "cpu",
                             "--llm",
                             "openai:scripted",
                             "--base-url",
                             url,
                             "--profile",
                             "ci",
                             "--no-bench",
                             "--no-print-report",
                             "--out",
                             out.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

int wait_exit(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);  // as a shell reports it: 139 = SIGSEGV
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

using Key = std::tuple<std::string, int, int, std::string>;
std::set<Key> keys_of(const fs::path& run) {
  std::set<Key> k;
  for (const auto& r : kforge::load_attempts(run).records)
    k.insert({r.task, r.sample, r.turn, std::string(kforge::to_string(r.outcome))});
  return k;
}

/// pass@1 column of the repair-curve table in report.md, by turn.
std::vector<std::string> repair_pass1(const fs::path& run) {
  std::vector<std::string> v;
  std::istringstream in(slurp(run / "report.md"));
  std::string line;
  bool in_curve = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_curve = line == "## Repair curve";
    if (!in_curve || line.rfind("| ", 0) != 0 || line.rfind("| turn", 0) == 0 || line.rfind("| ---", 0) == 0)
      continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, '|')) cells.push_back(c);
    if (cells.size() > 5) v.push_back(cells[5].substr(1, cells[5].size() - 2));
  }
  return v;
}

}  // namespace

TEST_CASE("kforge run repairs gelu_tanh over three turns with feedback in the prompts", "[agent]") {
  Server srv(fs::path(KFORGE_TESTS_DIR) / "data/scripted/repair_demo.json");
  fs::path out = temp_dir("repair") / "run";
  // No peaks cached for this device: the run has the judge measure them and caches them.
  const fs::path peaks = out.parent_path() / "device_peaks.json";
  setenv("KFORGE_PEAKS_FILE", peaks.c_str(), 1);
  pid_t pid = spawn(
      run_args(srv.url(), out, {"--only", "activation/gelu_tanh", "--turns", "3", "--trials", "2"}), -1);
  const int rc = wait_exit(pid);
  unsetenv("KFORGE_PEAKS_FILE");
  REQUIRE(rc == 0);
  REQUIRE(fs::exists(peaks));
  const auto cached = json::parse(slurp(peaks));
  REQUIRE(cached["devices"].size() == 1);
  CHECK(cached["devices"].begin().value()["dram_bytes_per_s"].get<double>() > 1e8);
  CHECK(cached["devices"].begin().value()["flops_per_s"].get<double>() > 1e8);
  auto recs = kforge::load_attempts(out).records;
  REQUIRE(recs.size() == 3);
  std::map<int, std::string> by_turn;
  for (const auto& r : recs) by_turn[r.turn] = std::string(kforge::to_string(r.outcome));
  CHECK(by_turn[1] == "compile_error");
  CHECK(by_turn[2] == "output_mismatch");
  CHECK(by_turn[3] == "pass");
  const fs::path ep = out / "attempts/activation/gelu_tanh/0";
  const std::string p2 = slurp(ep / "2/prompt.md"), p3 = slurp(ep / "3/prompt.md");
  CHECK(p2.find("kernel.cpp:14:43: error: 'kSqrt2OverPi' was not declared") != std::string::npos);
  CHECK(p2.find("std::tanh(kSqrt2OverPi * (v + 0.044715f") != std::string::npos);  // the source line
  CHECK(p3.find("output_mismatch") != std::string::npos);
  CHECK(p3.find("elements") != std::string::npos);
  CHECK(p3.find("differ") != std::string::npos);
  CHECK(p3.find("- turn 1: compile_error") != std::string::npos);     // the trajectory (issue 39)
  CHECK(p3.find("### Your attempt at turn 1") == std::string::npos);  // history policy: last
  CHECK(p2.find("measured memory bandwidth") != std::string::npos);   // the prompt states the measured peaks
  CHECK(fs::exists(ep / "3/kernel.cpp"));
  CHECK(fs::exists(ep / "1/build.log"));
  CHECK(fs::exists(ep / "1/response.txt"));
  REQUIRE(fs::exists(out / "summary.json"));
  CHECK(repair_pass1(out) == std::vector<std::string>{"0.000", "0.000", "1.000"});
  fs::remove_all(out.parent_path());
}

TEST_CASE("kforge run: LLM faults are named outcomes, nothing is lost, --resume asks llm_error turns again",
          "[agent]") {
  fs::path dir = temp_dir("faults");
  const std::string a = "activation/gelu_tanh", b = "activation/mish", c = "activation/swiglu",
                    d = "activation/log_softmax_temperature";
  json script{{"default", {{"content", "no code here"}}},
              {"replies",
               {{{"task", a}, {"turn", 1}, {"fault", "429"}, {"retry_after", 0}, {"times", 1}},
                {{"task", a}, {"turn", 1}, {"content", "after one 429, still no code"}},
                {{"task", a}, {"turn", 2}, {"fault", "empty"}},
                {{"task", b}, {"turn", 1}, {"fault", "500"}},
                {{"task", c}, {"turn", 1}, {"fault", "slow"}, {"delay_ms", 3000}, {"content", "late"}},
                {{"task", d}, {"turn", 1}, {"fault", "malformed"}}}}};
  std::ofstream(dir / "script.json") << script.dump(2);
  fs::path out = dir / "run";
  {
    Server srv(dir / "script.json");
    pid_t pid = spawn(run_args(srv.url(), out,
                               {"--tasks", a + "," + b + "," + c + "," + d, "--turns", "3", "--samples", "2",
                                "--stop-on", "never", "--llm-retries", "1", "--llm-timeout-ms", "400",
                                "--llm-concurrency", "2", "--max-llm-failures", "0"}),
                      -1);
    // Episodes of b, c and d end paused at an llm_error: exit 75 (README), --resume asks again.
    REQUIRE(wait_exit(pid) == 75);
  }
  auto recs = kforge::load_attempts(out).records;
  // a: 3 turns per sample (429 retried, then empty, then no code); b, c, d: each sample pauses
  // at its turn-1 llm_error instead of spending turns on a failing endpoint.
  REQUIRE(recs.size() == 2 * 3 + 3 * 2);
  std::map<std::string, std::string> want_llm{{b, "http_error"}, {c, "timeout"}, {d, "malformed_reply"}};
  for (const auto& r : recs) {
    INFO(r.task << " turn " << r.turn << " " << r.llm_status);
    CHECK(fs::exists(out / r.attempt_dir / "result.json"));
    if (r.task == a) {
      CHECK(r.outcome == kforge::Outcome::format_error);
      CHECK(r.llm_status == (r.turn == 2 ? "empty_reply" : "ok"));
      if (r.turn == 2) CHECK(r.sub_kind == "empty_reply");
    } else {
      CHECK(r.turn == 1);
      CHECK(r.outcome == kforge::Outcome::llm_error);
      CHECK(r.sub_kind == want_llm[r.task]);
    }
  }
  // llm_error is recorded but not scored: only task a's 6 attempts count.
  auto summary = json::parse(slurp(out / "summary.json"));
  CHECK(summary["overall"]["attempts"]["attempts"] == 6);
  CHECK(summary["overall"]["attempts"]["llm_errors"] == 6);
  CHECK(summary["overall"]["best"]["tasks"] == 1);
  CHECK(slurp(out / "report.md").find("llm_error") != std::string::npos);

  // The endpoint recovers; a bare --resume (new URL only) restores samples, turns, profile,
  // backend and the rest from manifest.json and asks the llm_error turns again.
  std::ofstream(dir / "healed.json") << json{{"default", {{"content", "no code here"}}}}.dump();
  Server healed(dir / "healed.json");
  REQUIRE(wait_exit(spawn({std::string(KFORGE_BUILD_DIR) + "/agent/kforge", "run", "--resume", out.string(),
                           "--base-url", healed.url(), "--no-print-report"},
                          -1)) == 0);
  auto all = kforge::load_attempts(out).records;
  CHECK(all.size() == recs.size() + 3 * 2 * 3);  // b, c, d: turns 1-3 of both samples, appended
  std::set<std::tuple<std::string, int, int>> keys;
  for (const auto& r : all) keys.insert({r.task, r.sample, r.turn});
  CHECK(keys.size() == 4 * 2 * 3);
  summary = json::parse(slurp(out / "summary.json"));
  CHECK(summary["overall"]["attempts"]["attempts"] == 4 * 2 * 3);
  CHECK(summary["overall"]["attempts"]["llm_errors"] == 0);
  CHECK(summary["overall"]["best"]["tasks"] == 4);
  CHECK(summary["warnings"].empty());  // a re-asked llm_error turn is not a duplicate
  auto manifest = json::parse(slurp(out / "manifest.json"));
  CHECK(manifest["config"]["base_url"] == healed.url());  // the configuration in effect
  CHECK(manifest["config"]["turns"] == 3);
  REQUIRE(manifest["resumes"].size() == 1);
  CHECK(manifest["resumes"][0]["given"] == json({"base_url", "print_report", "resume"}));

  // A resume may extend the run: one more turn for every sample, and the manifest says so.
  REQUIRE(wait_exit(spawn({std::string(KFORGE_BUILD_DIR) + "/agent/kforge", "run", "--resume", out.string(),
                           "--base-url", healed.url(), "--turns", "4", "--no-print-report"},
                          -1)) == 0);
  CHECK(kforge::load_attempts(out).records.size() == all.size() + 4 * 2);
  manifest = json::parse(slurp(out / "manifest.json"));
  CHECK(manifest["config"]["turns"] == 4);
  CHECK(manifest["resumes"].size() == 2);
  fs::remove_all(dir);
}

TEST_CASE("kforge run stops after --max-llm-failures consecutive LLM failures (exit 75)", "[agent]") {
  fs::path dir = temp_dir("llmdown");
  std::ofstream(dir / "script.json") << json{{"replies", json::array({{{"fault", "500"}}})}}.dump();
  Server srv(dir / "script.json");
  fs::path out = dir / "run";
  pid_t pid = spawn(run_args(srv.url(), out,
                             {"--only", "activation/", "--samples", "4", "--turns", "3", "--llm-retries", "0",
                              "--llm-concurrency", "1", "--compile-jobs", "1", "--max-llm-failures", "3"}),
                    -1);
  REQUIRE(wait_exit(pid) == 75);
  auto recs = kforge::load_attempts(out).records;
  CHECK(recs.size() >= 3);
  CHECK(recs.size() < 4 * 4);  // far fewer than one call per episode
  for (const auto& r : recs) {
    CHECK(r.outcome == kforge::Outcome::llm_error);
    CHECK(r.turn == 1);
  }
  CHECK(fs::exists(out / "report.md"));
  fs::remove_all(dir);
}

TEST_CASE(
    "kforge run sends per-sample temperature, top_p, max_tokens, seed; --task-token-budget bounds a task",
    "[agent]") {
  fs::path dir = temp_dir("params");
  std::ofstream(dir / "script.json") << json{
      {"default",
       {{"content", "no code here"},
        {"prompt_tokens", 100},
        {"completion_tokens", 20}}}}.dump();
  {
    Server srv(dir / "script.json", dir / "requests.jsonl");
    pid_t pid = spawn(run_args(srv.url(), dir / "run",
                               {"--tasks",
                                "activation/gelu_tanh",
                                "--samples",
                                "3",
                                "--turns",
                                "2",
                                "--temperature",
                                "0,0.7",
                                "--top-p",
                                "0.9",
                                "--max-tokens",
                                "2048",
                                "--seed",
                                "100",
                                "--llm-concurrency",
                                "1",
                                "--price-in",
                                "2",
                                "--price-out",
                                "10"}),
                      -1);
    REQUIRE(wait_exit(pid) == 0);
  }
  std::map<int, int> requests_per_sample;
  std::istringstream log(slurp(dir / "requests.jsonl"));
  for (std::string line; std::getline(log, line);) {
    auto j = json::parse(line);
    const int s = j["sample"].get<int>();
    ++requests_per_sample[s];
    CHECK(std::fabs((j["temperature"].get<double>()) - (s == 0 ? 0.0 : 0.7)) < 1e-9);
    CHECK(std::fabs((j["top_p"].get<double>()) - (0.9)) < 1e-9);
    CHECK(j["max_tokens"] == 2048);
    CHECK(j["seed"] == 100 + s);
  }
  CHECK(requests_per_sample == std::map<int, int>{{0, 2}, {1, 2}, {2, 2}});
  for (const auto& r : kforge::load_attempts(dir / "run").records) {
    CHECK(std::fabs((r.temperature) - (r.sample == 0 ? 0.0 : 0.7)) < 1e-9);
    CHECK(std::fabs((r.cost_usd) - ((100 * 2.0 + 20 * 10.0) / 1e6)) < 1e-9);
  }

  // 120 tokens a call: a budget of 250 lets at most 3 calls start (the third starts at 240).
  fs::path out = dir / "budget";
  {
    Server srv(dir / "script.json");
    REQUIRE(wait_exit(spawn(
                run_args(srv.url(), out,
                         {"--tasks", "activation/gelu_tanh", "--samples", "3", "--turns", "2",
                          "--llm-concurrency", "1", "--compile-jobs", "1", "--task-token-budget", "250"}),
                -1)) == 0);
  }
  auto recs = kforge::load_attempts(out).records;
  CHECK(recs.size() >= 3);
  CHECK(recs.size() < 6);
  fs::remove_all(dir);
}

TEST_CASE("kforge run --resume after SIGKILL gives the same attempts as an uninterrupted run", "[agent]") {
  fs::path dir = temp_dir("resume");
  const std::vector<std::string> extra{
      "--only",   "activation/", "--max-tasks",       "3", "--turns",        "3",
      "--trials", "2",           "--llm-concurrency", "1", "--compile-jobs", "1"};
  std::set<Key> full;
  {
    Server srv(fs::path(KFORGE_TESTS_DIR) / "data/scripted/repair_demo.json");
    pid_t pid = spawn(run_args(srv.url(), dir / "full", extra), -1);
    REQUIRE(wait_exit(pid) == 0);
    full = keys_of(dir / "full");
  }
  REQUIRE(full.size() == 3 + 2 * 3);  // gelu_tanh repairs in 3 turns; 2 tasks never pass
  Server srv(fs::path(KFORGE_TESTS_DIR) / "data/scripted/repair_demo.json");
  fs::path out = dir / "killed";
  pid_t pid = spawn(run_args(srv.url(), out, extra), -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool killed = false;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (fs::exists(out / "attempts.jsonl") && !slurp(out / "attempts.jsonl").empty()) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  wait_exit(pid);
  REQUIRE(killed);
  const auto partial = keys_of(out);
  CHECK(partial.size() < full.size());
  std::vector<std::string> resume{std::string(KFORGE_BUILD_DIR) + "/agent/kforge",
                                  "run",
                                  "--resume",
                                  out.string(),
                                  "--backend",
                                  "cpu",
                                  "--profile",
                                  "ci",
                                  "--no-bench",
                                  "--no-print-report"};
  resume.insert(resume.end(), extra.begin(), extra.end());
  REQUIRE(wait_exit(spawn(resume, -1)) == 0);
  CHECK(keys_of(out) == full);
  CHECK(kforge::load_attempts(out).records.size() == full.size());  // no duplicates
  fs::remove_all(dir);
}

TEST_CASE("kforge run runs TritonBench-T tasks under Triton's interpreter, judged on their test blocks",
          "[agent]") {
  // A two-task checkout in TritonBench's layout; the scripted model answers each task with a
  // Triton implementation of the task's own function. Two cpu runners: two judge slots.
  const fs::path fixture = fs::path(KFORGE_TESTS_DIR) / "data/tritonbench_run";
  fs::path dir = temp_dir("tritonbench");
  Server srv(fixture / "script.json", dir / "requests.jsonl");
  const fs::path out = dir / "run";
  pid_t pid =
      spawn({std::string(KFORGE_BUILD_DIR) + "/agent/kforge", "run", "--suite", fixture.string(), "--backend",
             "triton", "--device", "cpu", "--devices", "cpu,cpu", "--llm", "openai:scripted", "--base-url",
             srv.url(), "--trials", "2", "--no-print-report", "--out", out.string()},
            -1);
  REQUIRE(wait_exit(pid) == 0);
  auto recs = kforge::load_attempts(out).records;
  REQUIRE(recs.size() == 2);
  for (const auto& r : recs) {
    INFO(r.task << ": " << kforge::to_string(r.outcome) << "/" << r.sub_kind << ": " << r.message);
    CHECK(r.outcome == kforge::Outcome::pass);
    CHECK(r.backend == "triton");
    const std::string prompt = slurp(out / r.attempt_dir / "prompt.md");
    const std::string fn = r.task.substr(2);
    CHECK(prompt.find("(TritonBench)") != std::string::npos);
    CHECK(prompt.find(fn + "(input, ") != std::string::npos);  // the signature TritonBench states
    CHECK(prompt.find("kf_forward") == std::string::npos);     // the task's own function, not the ABI
    CHECK(fs::exists(out / r.attempt_dir / "kernel.py"));
  }
  const auto manifest = json::parse(slurp(out / "manifest.json"));
  REQUIRE(manifest["devices"].size() == 2);
  CHECK(manifest["devices"][0]["device"] == "cpu");
  CHECK(manifest["config"]["devices"] == json({"cpu", "cpu"}));
  const auto summary = json::parse(slurp(out / "summary.json"));
  CHECK(summary["overall"]["attempts"]["call_accuracy"] == 1.0);
  fs::remove_all(dir);
}
