#pragma once
// kforge/agent/run_command.hpp — the options of one `kforge run` (RunCommand) and of one
// `kforge eval` (EvalCommand) as values. The fields' initializers are the options' defaults; the
// option table (run_options.hpp) declares the rest: flags, help, the manifest and --resume. Below
// the table, the agent loop (episode.hpp) and eval (evaluation.hpp), which include it. Plain
// structs and a pure function; thread-safe as values.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/runs/shard.hpp"

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
  /// --shard K/N: only the (task, sample) episodes this shard owns (runs/shard.hpp); 0/1: all.
  Shard shard;
  /// Sampling temperature per sample: sample s uses temperatures[min(s, size-1)], e.g. {0, 0.8}
  /// is greedy for sample 0 and 0.8 for the rest. Empty: 0.
  std::vector<double> temperatures{0.0};
  double top_p = 1.0;
  int max_tokens = 4096;         ///< completion tokens per reply
  std::string reasoning_effort;  ///< "" (off), low, medium, high, or an anthropic token budget
  std::int64_t seed = 0;         ///< request seed = seed + sample (openai-compatible servers)
  std::optional<double> price_input_per_mtok, price_output_per_mtok;  ///< USD per 1M tokens
  int token_budget = 6000;             ///< history section of a prompt, tokens (~4 chars each)
  std::int64_t task_token_budget = 0;  ///< LLM tokens (prompt + completion) per task; 0: none
  int max_llm_failures = 10;           ///< consecutive llm_errors that stop the run; 0: never
  int max_infra_failures = 5;          ///< consecutive infra_errors that stop the run (exit 76); 0: never
  int llm_concurrency = 4;
  int compile_jobs = 0;  ///< 0: hardware concurrency
  int llm_timeout_ms = 300000;
  int llm_retries = 5;
  int trials = 5;  ///< correctness trials (docs/judge.md default)
  /// Lower-precision math the run credits (tf32, fp16, bf16); other kinds detected in a passing
  /// artifact on a task of higher dtype are recorded and not credited with a speedup.
  std::vector<std::string> allow_precision;
  /// (triton) ATen ops a candidate may run besides allocation, views and copies (--allow-ops).
  std::vector<std::string> allow_ops;
  bool bench = true;
  int reps = 100;                  ///< timed repetitions at most (docs/judge.md: >= 100)
  int perf_inputs = 0;             ///< TritonBench: performance inputs timed per task (BenchOptions; 0 = all)
  std::string baseline = "eager";  ///< eager, or compile: torch.compile timed too (as eval's --baseline)
  std::string device;              ///< "" = cpu for cpu, cuda:0 for cuda
  /// Judge runners, one slot each (--devices): {"all"} = every GPU the judge sees (the host for
  /// cpu), or a list such as {"cuda:0", "cuda:2"} or {"cpu", "cpu"}; empty: `device` alone.
  std::vector<std::string> devices;
  std::string profiler = "auto";  ///< none | basic | ncu | auto (ncu where it works, else basic)
  bool profile_failing = false;   ///< ncu also for output_mismatch attempts (recorded only)
  /// ncu on every pass; default: only on a pass that improves its episode's best speedup (other
  /// passes get the basic profile). The manifest's "profile_policy" says which ran.
  bool profile_every_pass = false;
  bool print_report = true;
  /// Options given on the command line: their keys in the option table (run_options.hpp, e.g.
  /// "turns", "bench" for --no-bench). On --resume, every recorded option not in this set is
  /// taken from manifest.json; one in it that would change results is checked against it.
  std::set<std::string> given;
};

/// The temperature of sample `sample` (see RunCommand::temperatures).
double sample_temperature(const RunCommand& cmd, int sample);

/// `kforge eval`: evaluates existing kernels DIR/<task-id>/kernel.{cpp,cu} or, several samples
/// per task, DIR/<task-id>/<sample>/kernel.{cpp,cu} (no LLM), and reports pass@k.
struct EvalCommand {
  std::string suite;  ///< built-in suite name or directory
  std::string backend = "cpu";
  std::filesystem::path kernels;
  std::filesystem::path out;
  std::string profile;  ///< "" = the default shapes
  int trials = 5;
  bool bench = true;
  int reps = 100;
  int perf_inputs = 0;  ///< TritonBench: performance inputs timed per task (BenchOptions; 0 = all)
  std::string arch;     ///< cuda target, "" = detect
  std::string device;   ///< "" = cpu for the cpu backend, cuda:0 for cuda
  /// Judge runners, one slot each (--devices, as run's: runners.hpp); a device may repeat.
  /// Empty: one runner on `device`.
  std::vector<std::string> devices;
  std::string baseline = "eager";
  std::string only;                          ///< evaluate only task ids containing this substring
  std::string profiler = "auto";             ///< none | basic | ncu | auto (ncu where it works, else basic)
  bool profile_failing = false;              ///< ncu also for output_mismatch attempts (recorded only)
  std::vector<std::string> allow_precision;  ///< lower-precision kinds credited: tf32, fp16, bf16
  std::vector<std::string> allow_ops;        ///< (triton) ATen ops allowed besides allocation/views/copies
  /// Kernels compiled (and statically scanned) at once (--jobs), while the judge loads, checks,
  /// benches and profiles one kernel at a time per runner. 1: one compile at a time beside the
  /// judge, so no compile competes with a timed run for the CPU (the cpu backend's device).
  int jobs = 1;
};

}  // namespace kforge::agent
