// kforge/common/failure.hpp — the one failure type of kforge's side-effect boundaries.
//
// A `Failure` is an *expected* failure of kforge's own machinery (not the candidate's: a
// candidate's compile error or mismatch is an Outcome, a value of the judge's verdict): the LLM
// endpoint failed after its retries, the toolchain is missing, the judge worker died or timed
// out, a task's reference failed, an episode threw. Every port of the agent loop (chat, build,
// judge; agent/ports.hpp) completes with `Expected<T>`: either its value or a Failure with a
// named kind. Values; no ownership beyond their strings; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kforge {

/// What kind of kforge-side failure. Closed set; to_string() gives the snake_case name.
enum class FailureKind {
  llm,        ///< the LLM endpoint failed after retries (sub_kind: the ChatStatus name)
  toolchain,  ///< the compiler or interpreter is missing or broken
  judge,      ///< the judge worker died, timed out, or answered with its own error
  reference,  ///< the task's reference failed to load or run
  internal,   ///< an exception inside kforge (a bug or a broken environment)
  cancelled,  ///< the work was abandoned (the run is stopping)
};

inline std::string_view to_string(FailureKind k) {
  switch (k) {
    case FailureKind::llm:
      return "llm";
    case FailureKind::toolchain:
      return "toolchain";
    case FailureKind::judge:
      return "judge";
    case FailureKind::reference:
      return "reference";
    case FailureKind::internal:
      return "internal";
    case FailureKind::cancelled:
      return "cancelled";
  }
  return "unknown";
}

/// Parses the names to_string(FailureKind) gives; std::nullopt for any other.
inline std::optional<FailureKind> failure_kind_from_string(std::string_view s) {
  for (FailureKind k : {FailureKind::llm, FailureKind::toolchain, FailureKind::judge, FailureKind::reference,
                        FailureKind::internal, FailureKind::cancelled})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

struct Failure {
  FailureKind kind = FailureKind::internal;
  std::string sub_kind;  ///< the finer name recorded as the attempt's sub_kind (e.g. judge_died)
  std::string message;   ///< what went wrong, in words
};

/// Either a value or a Failure (tl::expected-style, the subset kforge uses).
template <class T>
class Expected {
 public:
  Expected(T v) : v_(std::move(v)) {}        // NOLINT: implicit by design
  Expected(Failure f) : v_(std::move(f)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Failure& failure() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Failure> v_;
};

}  // namespace kforge
