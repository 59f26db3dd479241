// kforge/backends/triton_scan.hpp — the static scan of a Triton candidate (docs/backends.md).
//
// Before a Triton candidate is imported anywhere, backends/triton/ast_scan.py reads it with
// Python's own parser (python3 -I, standard library only, in the sandbox) and reports every
// construct with no place in a kernel: imports outside the allow-list, process/file/network
// access, threads, host compute (numpy on tensor data, .tolist(), .numpy()), dynamic code and
// imports, dunder and private-API access (modules re-exported under torch/triton included: the
// script resolves attribute chains against the installed packages), torch dispatch internals,
// streams and graphs, monkeypatching, and state kept across calls. The rules and their reasons
// live in the script.
// A finding makes the attempt forbidden_api with the rule as its sub-kind; a syntax error is
// compile_error/syntax; a scan that could not run is kforge's infra_error.
// What only running can tell (compute done by torch, outputs aliasing inputs) is left to the
// runtime checks of the candidate host.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/backends/python_errors.hpp"
#include "kforge/common/outcome.hpp"

namespace kforge::backends {

/// One construct the scan refuses.
struct ScanFinding {
  std::string rule;         ///< e.g. "process", "torch_internals", "nonlocal_state_mutation"
  int line = 0;             ///< 1-based
  int column = 0;           ///< 1-based
  std::string what;         ///< the construct, e.g. "import subprocess", "torch._C._DisableTorchDispatch"
  std::string why;          ///< the rule's reason
  std::string source_line;  ///< the candidate's line, trimmed
};

struct ScanResult {
  Outcome outcome =
      Outcome::infra_error;           ///< pass (nothing found), forbidden_api, compile_error, infra_error
  std::vector<ScanFinding> findings;  ///< in source order
  std::optional<PythonErrorVerdict> syntax_error;  ///< set when the module does not parse
  std::string error;                               ///< infra_error: why the scan could not run

  /// The first finding's rule (forbidden_api), "syntax" (compile_error), else "".
  std::string sub_kind() const;
  /// Feedback text: one line per finding, "kernel.py:L:C: forbidden (rule): what: why", then
  /// the source line; at most `max_findings` findings, then a count of the rest.
  std::string summary(std::size_t max_findings = 5, std::string_view source_name = "kernel.py") const;
};

/// Parses the scanner's JSON (its stdout) for the candidate `source`. Malformed output is an
/// infra_error naming the problem.
ScanResult parse_scan_output(std::string_view json, std::string_view source);

struct ScanOptions {
  std::string python = "python3";  ///< interpreter (looked up on PATH when it has no '/')
  std::filesystem::path script;    ///< empty: ast_scan_script()
  std::chrono::milliseconds timeout{20'000};
  /// Scan through a warm scanner (ast_scan.py --serve: torch and Triton imported once, a fresh
  /// fork per scan, the same result as a cold run); false: one interpreter per scan.
  bool warm = true;
};

/// <kforge_home>/backends/triton/ast_scan.py.
std::filesystem::path ast_scan_script();

/// Runs the scan on a candidate file in the sandbox (argv only, no network, rlimits, its own
/// process group, a wall-clock limit) and parses the result. Never throws for a bad candidate;
/// a missing interpreter or script, a timeout or a crash of the scanner is an infra_error.
/// With `options.warm` the scan goes through a process-wide pool of warm scanners (one per
/// concurrent caller, each kept for later scans; thread-safe): a scan of a small module then
/// costs a fork instead of importing torch and Triton (about 2-4 s of CPU each); a scanner that
/// fails on its own account is replaced by a cold scan, never charged to the candidate.
ScanResult scan_triton_candidate(const std::filesystem::path& file, const ScanOptions& options = {});

/// Spawns up to `count` warm scanners for `options` into that pool without waiting for them
/// (each imports torch and Triton meanwhile; the first scan to take one waits for its `ready`),
/// so that their start-up overlaps the judges'. Counts scanners the pool holds already. A
/// scanner that does not start costs nothing: a scan starts its own, or scans cold.
void prewarm_triton_scanners(int count, const ScanOptions& options = {});

}  // namespace kforge::backends
