// kforge/backends/evaluate.hpp — one candidate through compile -> check -> bench
// (docs/ARCHITECTURE.md), ending in exactly one Outcome (§7).
//
// evaluate() is the shared pipeline of `kforge eval` and the agent's turns: it compiles the
// source with the backend (sandboxed, cached), checks it on fresh inputs in a warm runner,
// and, when it passes and benchmarking is on, times candidate and reference side by side in
// the same worker. Every expected failure is a value; the function throws only on broken
// configuration (an unwritable work directory). Thread-safety: as the RunnerClient passed in
// (one owner); compile() itself may run concurrently for different work directories.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/backends/precision.hpp"
#include "kforge/backends/runner_client.hpp"

namespace kforge::backends {

struct EvalOptions {
  CompileOptions compile;
  int trials = 5;     ///< correctness trials (fresh inputs each)
  int64_t seed = -1;  ///< first trial's seed; -1: drawn at random (recorded in the result)
  bool bench = true;  ///< time passing candidates
  BenchOptions bench_options;
};

struct Evaluation {
  Outcome outcome = Outcome::runtime_error;
  std::string sub_kind;
  std::string message;  ///< feedback-ready text: compiler errors, mismatch summary, crash
  CompileResult compile;
  /// The backend that built the candidate (a registered one: it lives until the process exits,
  /// backend.hpp), set by compile_candidate(); it explains the candidate's failures.
  const Backend* backend = nullptr;
  /// The candidate host the backend needs (Backend::host_kind), set by compile_candidate().
  HostKind host = HostKind::native;
  std::optional<CheckResult> check;
  std::optional<BenchResult> bench;
  int64_t seed = 0;
  double compile_ms = 0, check_ms = 0, bench_ms = 0;
  /// Whose machinery failed, set exactly when outcome is infra_error (the toolchain missing or
  /// broken, the judge, the reference): never the candidate's fault. Decided where it happened
  /// (the compile, CheckResult::failure, BenchResult::failure) and carried unchanged.
  std::optional<FailureKind> failure;
  /// TritonBench's error group of the failure, when the backend names one
  /// (Backend::explain_failure: "Syntax", "Attr&Type", "Name&Ref", "Run&Logic", "Other"); "" otherwise.
  std::string error_group;
  /// The artifact's precision inspection (precision.hpp), when it was done at build time: it
  /// needs no GPU, so the build stage runs it on a compile slot, not in the judge's.
  std::optional<PrecisionReport> precision;
};

/// The first stage alone: compiles `source` in `workdir` (sandboxed, cached). Needs no runner,
/// so a pipeline can compile without holding a GPU slot. On failure the Evaluation is final
/// (compile_error / forbidden_api / timeout); on success `compile.ok()` and the outcome is unset
/// until check_and_bench(). Draws the check seed when options.seed < 0.
Evaluation compile_candidate(const Backend& backend, const std::string& source,
                             const std::filesystem::path& workdir, const EvalOptions& options);

/// One bench of a passing candidate (RunnerClient::bench); when it comes back timing_unstable
/// and options.retime_unstable, timed once more and the second result returned (timings = 2,
/// bench_ms the sum; timing_unstable kept, prefixed "twice: ", when the second is unstable too).
/// A second bench that fails returns the first.
BenchResult bench_retimed(RunnerClient& runner, const TaskRef& task, const std::filesystem::path& artifact,
                          const BenchOptions& options, HostKind host);

/// The second stage: checks the compiled candidate of `ev` against `task` in `runner` and, when
/// it passes and options.bench, times candidate and reference side by side. `before_bench`,
/// when set, is called once the check passed and before the bench begins (the profile step
/// starts its runs there, to wait at their gates while the bench runs: profile_step.hpp).
/// Requires ev.compile.ok(); throws std::logic_error otherwise.
void check_and_bench(Evaluation& ev, RunnerClient& runner, const TaskRef& task, const EvalOptions& options,
                     const std::function<void()>& before_bench = {});

/// Both stages: compiles `source` for `backend` in `workdir`, checks and benchmarks it against
/// `task` in `runner`. Shapes: whatever the task's profile makes them; times in ms.
Evaluation evaluate(const Backend& backend, const std::string& source, const std::filesystem::path& workdir,
                    RunnerClient& runner, const TaskRef& task, const EvalOptions& options);

}  // namespace kforge::backends
