// kforge/backends/python_traceback.hpp — reading Python's traceback text (docs/judge.md).
//
// Every reference is Python (PyTorch) and some candidate hosts are too, so the judge's failure
// messages carry Python tracebacks. parse_traceback reads one as Python prints it (chained
// tracebacks to the last one); failure_headline finds the one line that names a failure. What
// an exception means for a candidate (its outcome and error group) is its backend's reading
// (Backend::explain_failure; the triton backend's python_errors.hpp).
// All functions are pure (no I/O) and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::backends {

/// One `File "...", line N, in fn` entry of a traceback.
struct TracebackFrame {
  std::string file;
  int line = 0;
  std::string function;     ///< empty for a SyntaxError's location line
  std::string source_line;  ///< the echoed line, trimmed; empty when Python printed none
};

/// An exception as Python printed it.
struct PythonException {
  std::string type;                    ///< as printed, e.g. "triton.compiler.errors.CompilationError"
  std::string message;                 ///< everything after "Type: ", lines kept; may be empty
  std::vector<TracebackFrame> frames;  ///< of the exception raised last, outermost first
  std::string cause_type;  ///< the exception it was raised from or during ("ValueError"), if printed
};

/// Parses Python's traceback text (stderr of a failed run; anything before the first
/// "Traceback (most recent call last):" is ignored). Chained tracebacks are read to the last
/// one; the one before it gives cause_type. A text with no traceback but a final
/// `SomeError: message` line yields that exception without frames. std::nullopt when the text
/// shows no exception.
std::optional<PythonException> parse_traceback(std::string_view text);

/// The one line that names a failure. A text whose first line opens a Python traceback
/// (possibly after a prefix, such as "loading task x failed: python_exception: ") gives the
/// exception as Python's last line prints it, with the prefix: "... RuntimeError: CUDA error:
/// an illegal memory access" (the message's first line); any other text gives its first
/// non-empty line. Never "Traceback (most recent call last):"; "" for an empty text.
std::string failure_headline(std::string_view text);

}  // namespace kforge::backends
