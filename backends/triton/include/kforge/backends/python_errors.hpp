// kforge/backends/python_errors.hpp — the triton backend's reading of a Python candidate's
// exception as a kforge outcome (docs/judge.md; Backend::explain_failure).
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

#include "kforge/backends/backend.hpp"
#include "kforge/backends/python_traceback.hpp"
#include "kforge/common/outcome.hpp"

namespace kforge::backends {

/// TritonBench's four error groups, plus `other` for exceptions the paper does not count.
enum class PythonErrorGroup { syntax, attr_type, name_ref, run_logic, other };

/// "Syntax", "Attr&Type", "Name&Ref", "Run&Logic", "Other" (the paper's names).
std::string_view to_string(PythonErrorGroup g);

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

/// The triton backend's Backend::explain_failure: a build's compile_error is TritonBench's
/// Syntax group (the scan parses the module); a runtime_error of the host's `python_exception`
/// or `load` kind is the outcome its exception means (classify_traceback), its message the
/// headline, the candidate's line and the traceback's end (3000 characters at most).
/// std::nullopt for anything else, and for a text that shows no exception.
std::optional<FailureExplanation> explain_python_failure(const FailureFacts& facts);

}  // namespace kforge::backends
