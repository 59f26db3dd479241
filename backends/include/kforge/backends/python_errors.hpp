// kforge/backends/python_errors.hpp — Python exceptions as kforge outcomes (docs/judge.md).
//
// A Triton candidate fails with a Python exception: at import (SyntaxError), while Triton
// lowers a @triton.jit function (triton.compiler.errors.CompilationError, which wraps the
// real cause), at launch (OutOfResources), or while running (RuntimeError: CUDA error ...).
// classify_python_error maps the exception onto the closed outcome set with a sub-kind, and
// onto TritonBench's four error groups (seed 000, appendix D):
//   Syntax    — SyntaxError, IndentationError
//   Attr&Type — AttributeError, TypeError, NotImplementedError
//   Name&Ref  — NameError, KeyError, IndexError, ModuleNotFoundError, ImportError
//   Run&Logic — ValueError, ZeroDivisionError, RuntimeError, RecursionError, AssertionError,
//               CompilationError, ResultsError
// Two choices of ours: a CompilationError takes the group of the error it wraps when that is
// one of the 16 (a NameError inside a kernel is Name&Ref, as it would be outside one), else
// Run&Logic as in the paper; an exception outside the 16 (OSError, SystemExit, ...) is in the
// group `other`.
//
// Errors in the model's code that Python finds only when it runs it (names, attributes, types,
// imports) are the compile_error sub-kinds a compiler reports for C++: undeclared, no_member,
// type_mismatch, missing_include. Everything else raised while running is a runtime_error.
// All functions are pure (no I/O) and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/common/outcome.hpp"

namespace kforge::backends {

/// TritonBench's four error groups, plus `other` for exceptions the paper does not count.
enum class PythonErrorGroup { syntax, attr_type, name_ref, run_logic, other };

/// "Syntax", "Attr&Type", "Name&Ref", "Run&Logic", "Other" (the paper's names).
std::string_view to_string(PythonErrorGroup g);

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

/// What an exception means for an attempt.
struct PythonErrorVerdict {
  Outcome outcome = Outcome::runtime_error;
  std::optional<CompileErrorKind> compile_kind;  ///< set when outcome is compile_error
  std::optional<RuntimeErrorKind> runtime_kind;  ///< set when outcome is runtime_error
  std::optional<MismatchKind> mismatch_kind;     ///< set when outcome is output_mismatch
  PythonErrorGroup group = PythonErrorGroup::other;
  std::string type;         ///< the short type name: "CompilationError", "OutOfMemoryError"
  std::string inner_type;   ///< a CompilationError's cause ("AttributeError"); else empty
  std::string headline;     ///< one line for feedback: "NameError: name 'torch' is not defined"
  int line = 0;             ///< 1-based line in the candidate's file; 0 when not known
  std::string source_line;  ///< that line of the candidate (trimmed); for a CompilationError
                            ///< the offending kernel line even when the file line is unknown

  /// The sub-kind's name (to_string of whichever kind is set); "" when none.
  std::string sub_kind() const;
};

/// Classifies an exception given its type name (qualified or not), its message, and
/// optionally the traceback text, the candidate's source, and its file name as the traceback
/// names it (the last frame in a file of that base name gives the line; for a
/// CompilationError the line is found by locating the kernel excerpt in `source`).
PythonErrorVerdict classify_python_error(std::string_view type, std::string_view message,
                                         std::string_view traceback = {}, std::string_view source = {},
                                         std::string_view source_name = "kernel.py");

/// parse_traceback + classify_python_error; std::nullopt when the text shows no exception.
std::optional<PythonErrorVerdict> classify_traceback(std::string_view traceback, std::string_view source = {},
                                                     std::string_view source_name = "kernel.py");

/// The one line that names a failure. A text whose first line opens a Python traceback
/// (possibly after a prefix, such as "loading task x failed: python_exception: ") gives the
/// exception as Python's last line prints it, with the prefix: "... RuntimeError: CUDA error:
/// an illegal memory access" (the message's first line); any other text gives its first
/// non-empty line. Never "Traceback (most recent call last):"; "" for an empty text.
std::string failure_headline(std::string_view text);

}  // namespace kforge::backends
