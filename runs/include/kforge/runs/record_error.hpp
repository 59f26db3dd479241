#pragma once
// kforge/runs/record_error.hpp — the error of a run record that cannot be read (attempts.jsonl
// and its parts: attempt.hpp, attempt_profile.hpp, judge_timing.hpp, which all throw it; below
// them all). An exception type (a broken file, reported with file, line and field); immutable
// once thrown, thread-safe to read.
#include <cstddef>
#include <stdexcept>
#include <string>

namespace kforge {

/// A record that cannot be read. what() reads "<file>: line <n>: field '<f>': <reason>", each
/// part present when known (file "" and line 0 mean unknown; field "" for the whole line).
class RecordError : public std::runtime_error {
 public:
  RecordError(std::size_t line, std::string field, const std::string& reason);
  RecordError(std::string file, std::size_t line, std::string field, const std::string& reason);
  const std::string& file() const { return file_; }
  std::size_t line() const { return line_; }
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::size_t line_;
  std::string field_;
  std::string reason_;
};

}  // namespace kforge
