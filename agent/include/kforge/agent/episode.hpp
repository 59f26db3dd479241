#pragma once
// The agent loop (DESIGN.md §1, §2): `kforge run` drives, for every (task, sample), an
// episode of turns 1..T: render prompt -> LLM chat -> extract -> compile -> check -> bench ->
// feedback. Episodes run on one boost::asio::thread_pool; each episode's state advances on a
// single job at a time (its own strand of work). Concurrency bounds: LLM requests
// (LlmConfig::max_concurrency), compile jobs (a semaphore), runner slots (backends::RunnerPool,
// one RunnerClient per device; check+bench of one attempt holds the slot). Every attempt is
// appended to attempts.jsonl as it finishes (RunDir::append, fsynced); an LLM failure after
// retries is recorded as a format_error attempt with llm_status set. SIGINT/SIGTERM stop new
// turns; in-flight attempts finish and are recorded. `--resume` skips recorded turns and
// rebuilds the history from the attempt files.
#include <filesystem>
#include <string>
#include <vector>

namespace kforge::agent {

struct RunCommand {
  std::string suite;
  std::string backend = "cpu";
  std::string llm;  ///< PROVIDER:MODEL, e.g. openai:gpt-4o, anthropic:claude-..., replay:RUN_DIR
  std::string base_url;
  std::string api_key_env;  ///< name of the environment variable holding the API key
  int samples = 1;
  int turns = 1;
  std::string stop_on = "pass";   ///< pass | never
  std::string exemplar = "none";  ///< none | add | category | bm25 | library
  std::string history = "last";   ///< last | all
  std::string profile;
  std::filesystem::path out;
  std::filesystem::path resume;
  std::string only;
  std::vector<std::string> tasks;  ///< exact task ids (empty: all)
  int max_tasks = 0;               ///< 0: all
  double temperature = 0.0;
  int token_budget = 6000;  ///< history section, tokens (~4 chars each)
  int llm_concurrency = 4;
  int compile_jobs = 0;  ///< 0: hardware concurrency
  int llm_timeout_ms = 300000;
  int llm_retries = 5;
  int trials = 3;
  bool bench = true;
  int reps = 20;
  std::string device;  ///< "" = cpu for cpu, cuda:0 for cuda
  bool print_report = true;
};

/// Runs the agent loop. Returns 0 on success (also when interrupted after recording in-flight
/// attempts: then 130), 2 for bad arguments, 3 when the runner cannot start.
int run_agent(const RunCommand& cmd);

/// `kforge report RUN_DIR`: regenerates summary.json and report.md and prints report.md.
int run_report(const std::filesystem::path& run_dir);

/// `kforge compare RUN_A RUN_B`: prints the comparison table.
int run_compare(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace kforge::agent
