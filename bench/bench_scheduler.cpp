// bench_scheduler — the agent loop's scheduler (agent/scheduler.hpp) against its bound
// (issue 20 §5).
//
// The real Scheduler on one io_context drives N episodes (one turn each) through fake ports
// whose costs are timers: a scripted LLM whose latency is lognormal (mean 30 s, sigma 0.5),
// compile jobs of a fixed cost on `compile_jobs` slots, judge jobs of a fixed cost on `judges`
// slots. TIME-COMPRESSED: every simulated second lasts 1/compress of a real second (default
// 200: a 30 s reply takes 150 ms); the table reports simulated seconds. The bound is
// min(LLM concurrency / mean latency, compile_jobs / compile cost, judges / judge cost)
// attempts per simulated second; the ratio is the measured throughput over it. Also reported:
// the process's peak threads (sampled on the scheduler's progress timer), peak RSS and the
// scheduler's CPU time per attempt (the process's user+system time: the fakes spend none).
// What it does not measure: libcurl, the compiler and the judge themselves.
//
//   bench_scheduler [--compress F] [--json FILE] [--seed S]
#include <sys/resource.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "agent_fakes.hpp"
#include "kforge/agent/scheduler.hpp"

using namespace kforge;

namespace {

struct Config {
  const char* name;
  int episodes, llm_concurrency, compile_jobs, judges;
  double compile_s, judge_s;
};

int threads_now() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return 0;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

nlohmann::json run_one(const Config& c, double compress, std::uint64_t seed) {
  constexpr double kMeanS = 30.0, kSigma = 0.5;
  const double mu = std::log(kMeanS) - kSigma * kSigma / 2;  // lognormal with mean 30 s
  boost::asio::io_context io;
  test::FakeChat chat{io};
  test::FakeBuild build{io};
  test::FakeJudge judge{io, c.judges};
  test::FakeRender render;
  test::FakeStore store;
  test::FakeClock clock;
  test::FakeTasks tasks;
  auto rng = std::make_shared<std::mt19937_64>(seed);
  auto lat = std::make_shared<std::lognormal_distribution<double>>(mu, kSigma);
  chat.latency_ms = [=](const ChatRequest&) { return (*lat)(*rng) * 1000.0 / compress; };
  chat.reply = [](const ChatRequest& r) -> Expected<ChatResult> {
    ChatResult cr;
    cr.status = ChatStatus::ok;
    cr.text = "CODE:good " + r.task + " " + std::to_string(r.sample);  // distinct: every attempt compiles
    return cr;
  };
  build.cost_ms = c.compile_s * 1000.0 / compress;
  judge.cost_ms = c.judge_s * 1000.0 / compress;
  agent::MachineConfig mc;
  mc.turns = 1;
  mc.extract = test::fake_extract;
  agent::SchedulerConfig sc;
  sc.llm_concurrency = c.llm_concurrency;
  sc.compile_jobs = c.compile_jobs;
  sc.progress_interval_s = 0.01;
  agent::Scheduler s(io, {&chat, &build, &judge, &render, &store, &clock}, mc, sc);
  const int per_task = 8;  // samples per task, like `--samples 8`
  for (int i = 0; i < c.episodes; i += per_task) {
    agent::TaskJudging* tj = tasks.add("t/" + std::to_string(i / per_task));
    for (int k = 0; k < per_task && i + k < c.episodes; ++k) s.add({tj, k, 1, 0.0, {}, {}});
  }
  int peak_threads = threads_now();
  s.on_progress = [&](const agent::RunTally&, int) { peak_threads = std::max(peak_threads, threads_now()); };
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  const agent::RunTally t = s.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  const double sim_s = wall * compress;
  const double bound =
      std::min({c.llm_concurrency / kMeanS, c.compile_jobs / c.compile_s, c.judges / c.judge_s});
  const double throughput = t.attempts / sim_s;
  return {{"config", c.name},
          {"episodes", c.episodes},
          {"attempts", t.attempts},
          {"llm_concurrency", c.llm_concurrency},
          {"compile_jobs", c.compile_jobs},
          {"judges", c.judges},
          {"compile_s", c.compile_s},
          {"judge_s", c.judge_s},
          {"llm_latency", {{"distribution", "lognormal"}, {"mean_s", kMeanS}, {"sigma", kSigma}}},
          {"time_compression", compress},
          {"wall_s", wall},
          {"simulated_s", sim_s},
          {"throughput_per_s", throughput},
          {"bound_per_s", bound},
          {"ratio", throughput / bound},
          {"peak_llm_in_flight", t.peak_llm},
          {"peak_compiles", t.peak_compiles},
          {"peak_judges", t.peak_judges},
          {"peak_threads", peak_threads},
          {"peak_rss_mib", static_cast<double>(peak_rss_kib()) / 1024.0},
          {"scheduler_cpu_us_per_attempt", t.attempts ? cpu / t.attempts * 1e6 : 0.0}};
}

}  // namespace

int main(int argc, char** argv) {
  double compress = 200;
  std::string json_out = "bench_scheduler.json";
  std::uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--compress")) compress = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--json")) json_out = argv[i + 1];
    if (!std::strcmp(argv[i], "--seed")) seed = std::stoull(argv[i + 1]);
  }
  // LLM-bound rows: 50 requests per LLM slot (the bound is a steady state; with fewer, the
  // first reply's wait and the last reply's straggle dominate). Then the 1,024 in
  // flight, where compile capacity (16 jobs x 2 s) is the bound, at 1,000 and 5,000.
  const std::vector<Config> configs = {
      {"100 episodes, LLM-bound (2 in flight)", 100, 2, 16, 8, 2.0, 0.5},
      {"1000 episodes, LLM-bound (20)", 1000, 20, 16, 8, 2.0, 0.5},
      {"5000 episodes, LLM-bound (100)", 5000, 100, 16, 8, 2.0, 0.5},
      {"1000 episodes, compile-bound, 1024 LLM", 1000, 1024, 16, 8, 2.0, 0.5},
      {"5000 episodes, compile-bound, 1024 LLM", 5000, 1024, 16, 8, 2.0, 0.5},
  };
  std::printf(
      "bench_scheduler: TIME-COMPRESSED x%.0f (simulated seconds below); LLM latency lognormal mean 30 s\n",
      compress);
  std::printf("%-40s %8s %9s %9s %6s %7s %7s %8s %10s\n", "config", "attempts", "thru/s", "bound/s", "ratio",
              "threads", "RSS MiB", "llm peak", "cpu us/att");
  nlohmann::json all = nlohmann::json::array();
  for (const auto& c : configs) {
    auto r = run_one(c, compress, seed);
    std::printf("%-40s %8d %9.3f %9.3f %6.3f %7d %7.1f %8d %10.1f\n", c.name, r["attempts"].get<int>(),
                r["throughput_per_s"].get<double>(), r["bound_per_s"].get<double>(), r["ratio"].get<double>(),
                r["peak_threads"].get<int>(), r["peak_rss_mib"].get<double>(),
                r["peak_llm_in_flight"].get<int>(), r["scheduler_cpu_us_per_attempt"].get<double>());
    std::fflush(stdout);
    all.push_back(r);
  }
  std::ofstream(json_out)
      << nlohmann::json{{"bench", "bench_scheduler"}, {"time_compressed", true}, {"runs", all}}.dump(2)
      << "\n";
  std::printf("wrote %s\n", json_out.c_str());
  return 0;
}
