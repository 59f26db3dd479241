// runs/src/record_error.cpp — RecordError (record_error.hpp).
#include "kforge/runs/record_error.hpp"

#include <utility>

namespace kforge {

namespace {
std::string record_error_text(const std::string& file, std::size_t line, const std::string& field,
                              const std::string& reason) {
  std::string s;
  if (!file.empty()) s += file + ": ";
  if (line) s += "line " + std::to_string(line) + ": ";
  if (!field.empty()) s += "field '" + field + "': ";
  return s + reason;
}
}  // namespace

RecordError::RecordError(std::size_t line, std::string field, const std::string& reason)
    : RecordError(std::string(), line, std::move(field), reason) {}

RecordError::RecordError(std::string file, std::size_t line, std::string field, const std::string& reason)
    : std::runtime_error(record_error_text(file, line, field, reason)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)),
      reason_(reason) {}

}  // namespace kforge
