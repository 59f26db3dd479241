#pragma once
// The agent loop (docs/ARCHITECTURE.md): `kforge run` drives, for every (task, sample), an
// episode of turns 1..T: render prompt -> LLM chat -> extract -> build -> judge (check, bench,
// profile) -> record -> feedback. Each episode is a pure state machine (episode_machine.hpp);
// one Scheduler on one Boost.Asio io_context owns every episode's state and drives it through
// ports (ports.hpp): LLM requests on libcurl's multi interface (one thread for all of them),
// compile jobs on `compile_jobs` threads, one judge slot per runner (`--devices`), each with its
// own bound and FIFO queue (scheduler.hpp). Every attempt goes through the one attempt pipeline
// (attempt.hpp) that `kforge eval` uses, and is appended to attempts.jsonl as it finishes
// (RunDir::append, fsynced) by its one writer.
//
// LLM failures: an empty reply is the model's format_error (sub-kind empty_reply). Any other
// failure after the client's retries (HTTP error, 429, timeout, malformed body, transport) is
// recorded as an llm_error attempt (not scored, see metrics.hpp) and pauses that episode: no
// turn is spent on a failing endpoint. After `max_llm_failures` consecutive llm_errors the whole
// run stops like SIGINT (exit 75). `--resume` asks every llm_error turn again.
//
// kforge's own failures (toolchain missing, judge worker failed, reference failed, an exception
// inside an episode) are infra_error attempts: recorded, not scored, never shown to the model,
// and they pause the episode; after `max_infra_failures` consecutive ones the run stops (exit
// 76). `--resume` asks them again. A judge slot that keeps failing leaves the pool.
//
// SIGINT/SIGTERM stop intake at once: no new turn starts, LLM requests queued or in flight are
// dropped (their turns were not recorded; --resume asks them), builds and judges in flight
// finish and are recorded. `--resume RUN_DIR` restores the recorded configuration (every option
// not given again on the command line; a given one that would change results must match:
// run_options.hpp), skips recorded turns and rebuilds the history from the attempt files. The
// fields' initializers below are the options' defaults; the option table declares the rest.
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
  int reps = 100;      ///< timed repetitions at most (docs/judge.md: >= 100)
  int perf_inputs = 0;  ///< TritonBench: performance inputs timed per task (BenchOptions; 0 = all)
  std::string baseline = "eager";  ///< eager, or compile: torch.compile timed too (as eval's --baseline)
  std::string device;  ///< "" = cpu for cpu, cuda:0 for cuda
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

/// Runs the agent loop. Returns 0 on success, 130 when interrupted (in-flight attempts are
/// recorded), 75 when stopped by max_llm_failures consecutive llm_errors, 76
/// (kExitInfraError) when stopped by max_infra_failures consecutive infra_errors, 2 for bad
/// arguments, 3 when the runner cannot start. A task whose reference does not load (or whose
/// output is random in its module mode) is listed once as unusable (stderr, unusable.json, the
/// report) and costs no LLM call.
int run_agent(const RunCommand& cmd);

/// `kforge report RUN_DIR`: regenerates summary.json, report.md and report.html and prints
/// report.md.
int run_report(const std::filesystem::path& run_dir);

/// `kforge compare RUN_A RUN_B`: compares the tasks both runs attempted (warning on stderr
/// about the ones dropped, and about judging conditions that differ or a run that has not
/// finished: ComparedRuns::not_alike, also at the top of the page), prints the comparison and
/// writes it as `html` too ("" = no page). 2 when a run directory has no attempts.jsonl.
int run_compare(const std::filesystem::path& a, const std::filesystem::path& b,
                const std::filesystem::path& html);

/// Where compare writes its page when --html is not given: <out>/compare.html, or, without
/// --out, beside the runs: <parent of a>/compare-<a's name>-vs-<b's name>.html (never the
/// current directory unless a run lives there).
std::filesystem::path compare_page_path(const std::filesystem::path& a, const std::filesystem::path& b,
                                        const std::filesystem::path& out);

}  // namespace kforge::agent
