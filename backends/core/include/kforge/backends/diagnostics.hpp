// kforge/backends/diagnostics.hpp — compiler and linker messages as data (docs/judge.md).
//
// parse_diagnostics turns the output of g++ (`file:line:col: error: msg`), ld/collect2
// (`undefined reference to ...`, `ld returned 1 exit status`) and of the dialects a backend adds
// for its own tools (Backend::diagnostic_dialects: the cuda backend's nvcc front end
// `file(line): error: msg`, ptxas, nvlink; backends/cuda/cuda_diagnostics.cpp) into Diagnostic
// values, with the offending line copied from the candidate's source. classify() maps an error onto the
// compile_error sub-kinds of common/outcome.hpp, and summarise() renders the first distinct
// errors for the next prompt. All functions are pure (no I/O) and thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/common/outcome.hpp"

namespace kforge::backends {

enum class Severity { note, warning, error };

std::string_view to_string(Severity s);

/// The severity a tool's word names: "warning"; "note", "remark", "info": note; any other
/// ("error", "fatal error", "fatal", "catastrophic error"): error.
Severity severity_of(std::string_view word);

/// One message of a compiler, assembler or linker.
struct Diagnostic {
  std::string file;  ///< as printed ("kernel.cu"); empty for tool-level messages (ptxas, ld)
  int line = 0;      ///< 1-based; 0 when unknown
  int column = 0;    ///< 1-based; 0 when unknown
  Severity severity = Severity::error;
  std::string message;      ///< without the location and severity prefix
  std::string source_line;  ///< the candidate's line `line` when `file` is the candidate
  std::string tool;         ///< "compiler", "ptxas", "nvlink", "linker", "driver"
  /// The compiler's notes that follow this error or warning (gcc's `note: candidate: ...`,
  /// `note: declared here`; nvcc's `detected during instantiation of ...`), each as
  /// "file:line:col: note: message" with the note's source line, if any, on a second line.
  /// The notes also appear in the list as diagnostics of their own.
  std::vector<std::string> notes;
};

/// One tool's message format, tried on every line before the core's (g++, GNU ld, the driver):
/// `match` fills `d` (file, line, column, severity, message, tool) from a line that is one of its
/// messages and answers true; `context` answers the text of a line that continues the previous
/// error or warning (kept as one of its notes, not a diagnostic of its own), "" for any other.
struct DiagnosticDialect {
  std::function<bool(const std::string& line, Diagnostic& d)> match;
  std::function<std::string(const std::string& line)> context;
};

/// Parses a build log. `source` is the candidate's text and `source_name` its file name
/// ("kernel.cu"): diagnostics whose file has that base name get source_line filled. Lines that
/// are not diagnostics (context such as "In function ...", caret lines, "N errors detected")
/// are skipped. Fatal errors (and a dialect's: nvcc's "catastrophic error", ptxas "fatal") count
/// as errors.
/// `dialects`: the backend's own tools' formats (Backend::diagnostic_dialects), tried first.
std::vector<Diagnostic> parse_diagnostics(std::string_view log, std::string_view source = {},
                                          std::string_view source_name = {},
                                          const std::vector<DiagnosticDialect>& dialects = {});

/// The first diagnostic with severity error, or nullptr.
const Diagnostic* first_error(const std::vector<Diagnostic>& diags);

/// The compile_error sub-kind of one error message (see docs/judge.md): syntax, undeclared,
/// type_mismatch, no_member, missing_include, link, or other.
CompileErrorKind classify(const Diagnostic& d);

/// classify(first error); std::nullopt when there is no error.
std::optional<CompileErrorKind> classify_first_error(const std::vector<Diagnostic>& diags);

/// Feedback text: the first `max_errors` distinct errors (same file, line and message counted
/// once), each as "file:line:col: error: message" followed by the offending source line and at
/// most `max_notes` of its notes (indented; the count of notes left out after them), then
/// a count of the errors left out; cut at an entry boundary to at most `max_bytes` (a single
/// over-long entry is cut in the middle). Empty when there are no errors.
std::string summarise(const std::vector<Diagnostic>& diags, std::size_t max_errors = 5,
                      std::size_t max_bytes = 4096, std::size_t max_notes = 4);

}  // namespace kforge::backends
