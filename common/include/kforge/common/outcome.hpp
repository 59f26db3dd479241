// kforge/common/outcome.hpp — the closed set of attempt outcomes (docs/judge.md).
//
// Every attempt ends in exactly one Outcome; some outcomes carry a sub-kind naming
// the cause (a compile_error's category, an output_mismatch's kind, a runtime_error's
// CUDA error or signal). These are plain values: expected failures are never thrown.
// All functions are pure and thread-safe.
//
// llm_error is kforge's addition to docs/judge.md: the model endpoint failed (after the
// client's retries), so there is no model output to judge. It is recorded, so nothing is
// lost, but it is not a model attempt: metrics do not score it and `kforge run --resume`
// asks that turn again.
//
// infra_error (docs/judge.md) is kforge's own failure: the toolchain is missing, the judge
// worker failed, or the task's reference cannot load or run. Like llm_error it is recorded,
// never scored, and asked again on `--resume`.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace kforge {

/// The outcome of one attempt. The order is the order of the pipeline: an attempt that
/// fails earlier never reaches a later stage.
enum class Outcome {
  llm_error,        ///< the LLM call failed after retries (HTTP, 429, timeout, malformed); not scored
  infra_error,      ///< kforge's machinery failed (toolchain, judge, reference); not scored
  format_error,     ///< no code block, or no kf_forward entry point in the reply
  compile_error,    ///< the toolchain rejected the candidate (see CompileErrorKind)
  forbidden_api,    ///< the artifact references a forbidden symbol (torch, dlopen, fork, ...)
  runtime_error,    ///< crash, CUDA error, Python exception (see RuntimeErrorKind)
  timeout,          ///< the compile or the run exceeded its wall-clock limit
  output_mismatch,  ///< ran, but outputs differ from the reference (see MismatchKind)
  torch_fallback,   ///< (triton) compute done by PyTorch ops instead of the candidate
  pass,             ///< correct on every trial; carries a speedup when benchmarked
};

/// Sub-kinds of compile_error (docs/judge.md).
enum class CompileErrorKind { syntax, undeclared, type_mismatch, no_member, missing_include, link, other };

/// Sub-kinds of output_mismatch (docs/judge.md).
enum class MismatchKind {
  shape,
  dtype,
  values,
  nan_inf,
  unwritten,
  input_modified,
  bench_only,  ///< correct in the check, wrong on a repetition the judge verified during the bench
  aliases_input,  ///< (triton) a returned output shares memory with an input
};

/// Sub-kinds of runtime_error. CUDA error names map onto these; the exact name is kept
/// in the attempt's message.
enum class RuntimeErrorKind {
  illegal_memory_access,
  misaligned_address,
  invalid_launch,
  out_of_memory,
  segfault,
  out_of_bounds_write,  ///< a canary region next to an output changed
  sandbox,              ///< the candidate host was stopped by its confinement (seccomp, rlimit)
  nonzero_return,       ///< kf_forward returned non-zero
  signal,               ///< another fatal signal (SIGABRT, SIGFPE, SIGILL, ...)
  exit,                 ///< the process exited (e.g. the candidate called exit())
  python_exception,
  cuda_error,  ///< any other CUDA error
  other,
};

std::string_view to_string(Outcome o);
std::string_view to_string(CompileErrorKind k);
std::string_view to_string(MismatchKind k);
std::string_view to_string(RuntimeErrorKind k);

/// Parses the names produced by to_string; std::nullopt for an unknown name.
std::optional<Outcome> outcome_from_string(std::string_view s);

/// Every outcome, in pipeline order (for tests and histograms).
const std::array<Outcome, 10>& all_outcomes();

/// True for outcomes that judge the model's output (every outcome but llm_error and infra_error).
constexpr bool is_model_outcome(Outcome o) {
  return o != Outcome::llm_error && o != Outcome::infra_error;
}

/// A human sentence describing the outcome category, used in feedback prompts.
std::string_view describe(Outcome o);

}  // namespace kforge
