#include "kforge/common/outcome.hpp"

#include <array>
#include <utility>

namespace kforge {

namespace {
constexpr std::array<std::pair<Outcome, std::string_view>, 10> kOutcomeNames{{
    {Outcome::llm_error, "llm_error"},
    {Outcome::infra_error, "infra_error"},
    {Outcome::format_error, "format_error"},
    {Outcome::compile_error, "compile_error"},
    {Outcome::forbidden_api, "forbidden_api"},
    {Outcome::runtime_error, "runtime_error"},
    {Outcome::timeout, "timeout"},
    {Outcome::output_mismatch, "output_mismatch"},
    {Outcome::torch_fallback, "torch_fallback"},
    {Outcome::pass, "pass"},
}};
}  // namespace

const std::array<Outcome, 10>& all_outcomes() {
  static const std::array<Outcome, 10> all = [] {
    std::array<Outcome, 10> a{};
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = kOutcomeNames[i].first;
    return a;
  }();
  return all;
}

std::string_view to_string(Outcome o) {
  for (const auto& [v, n] : kOutcomeNames)
    if (v == o) return n;
  return "unknown";
}

std::optional<Outcome> outcome_from_string(std::string_view s) {
  for (const auto& [v, n] : kOutcomeNames)
    if (n == s) return v;
  return std::nullopt;
}

std::string_view to_string(CompileErrorKind k) {
  switch (k) {
    case CompileErrorKind::syntax:
      return "syntax";
    case CompileErrorKind::undeclared:
      return "undeclared";
    case CompileErrorKind::type_mismatch:
      return "type_mismatch";
    case CompileErrorKind::no_member:
      return "no_member";
    case CompileErrorKind::missing_include:
      return "missing_include";
    case CompileErrorKind::link:
      return "link";
    case CompileErrorKind::other:
      return "other";
  }
  return "other";
}

std::string_view to_string(MismatchKind k) {
  switch (k) {
    case MismatchKind::shape:
      return "shape";
    case MismatchKind::dtype:
      return "dtype";
    case MismatchKind::values:
      return "values";
    case MismatchKind::nan_inf:
      return "nan_inf";
    case MismatchKind::unwritten:
      return "unwritten";
    case MismatchKind::input_modified:
      return "input_modified";
    case MismatchKind::bench_only:
      return "bench_only";
    case MismatchKind::aliases_input:
      return "aliases_input";
  }
  return "values";
}

std::string_view to_string(RuntimeErrorKind k) {
  switch (k) {
    case RuntimeErrorKind::illegal_memory_access:
      return "illegal_memory_access";
    case RuntimeErrorKind::misaligned_address:
      return "misaligned_address";
    case RuntimeErrorKind::invalid_launch:
      return "invalid_launch";
    case RuntimeErrorKind::out_of_memory:
      return "out_of_memory";
    case RuntimeErrorKind::segfault:
      return "segfault";
    case RuntimeErrorKind::out_of_bounds_write:
      return "out_of_bounds_write";
    case RuntimeErrorKind::sandbox:
      return "sandbox";
    case RuntimeErrorKind::nonzero_return:
      return "nonzero_return";
    case RuntimeErrorKind::signal:
      return "signal";
    case RuntimeErrorKind::exit:
      return "exit";
    case RuntimeErrorKind::python_exception:
      return "python_exception";
    case RuntimeErrorKind::cuda_error:
      return "cuda_error";
    case RuntimeErrorKind::other:
      return "other";
  }
  return "other";
}

std::string_view describe(Outcome o) {
  switch (o) {
    case Outcome::llm_error:
      return "The model endpoint failed to answer (HTTP error, rate limit, timeout or malformed reply), so "
             "there was no candidate to judge.";
    case Outcome::infra_error:
      return "kforge itself failed (toolchain, judge worker or reference), so the candidate could not be "
             "judged; this is not the model's failure.";
    case Outcome::format_error:
      return "The reply could not be used: no code block with a kf_forward entry point was found.";
    case Outcome::compile_error:
      return "The candidate failed to compile.";
    case Outcome::forbidden_api:
      return "The candidate uses an API that kernels may not use (PyTorch/ATen, Python, dynamic "
             "loading, processes or sockets).";
    case Outcome::runtime_error:
      return "The candidate crashed or raised an error while running.";
    case Outcome::timeout:
      return "The candidate did not finish within the time limit.";
    case Outcome::output_mismatch:
      return "The candidate ran but its outputs differ from the reference.";
    case Outcome::torch_fallback:
      return "The candidate computed its result with PyTorch operators instead of its own kernel.";
    case Outcome::pass:
      return "The candidate is correct on every trial.";
  }
  return "";
}

}  // namespace kforge
