// kforge/backends/compile.hpp — building one candidate into a loadable artifact
// (docs/ARCHITECTURE.md "compile(candidate) -> Artifact | Diagnostics", §5, §6, §7).
//
// compile() writes the candidate's source into a work directory, looks the build up in the
// content-addressed compile cache, otherwise runs the backend's compiler through
// sandbox::run (argv only, environment allow-list, wall-clock limit, LC_ALL=C so messages are
// ASCII), parses diagnostics when the compiler fails, runs the forbidden-symbol check when it
// succeeds, and stores clean artifacts in the cache. Every expected failure is a value in
// CompileResult; only a broken configuration (an unwritable work directory) throws.
// compile() is thread-safe for distinct work directories (the cache is safe to share).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/diagnostics.hpp"
#include "kforge/backends/symbols.hpp"
#include "kforge/common/outcome.hpp"

namespace kforge::backends {

enum class CompileStatus {
  ok,                 ///< artifact built and clean
  compile_error,      ///< the toolchain rejected the candidate; sub_kind says why
  forbidden_api,      ///< built (or failed to link) referencing forbidden symbols/libraries
  timeout,            ///< the compiler ran past CompileOptions::timeout
  toolchain_missing,  ///< compiler, nm or readelf not found: not the candidate's fault
};

std::string_view to_string(CompileStatus s);

struct CompileResult {
  CompileStatus status = CompileStatus::toolchain_missing;
  std::optional<CompileErrorKind> sub_kind;  ///< compile_error only
  std::vector<Diagnostic> diagnostics;       ///< everything the toolchain printed, parsed
  std::vector<ForbiddenUse> forbidden;       ///< forbidden_api only
  /// Feedback text: the first distinct errors with file:line and source line, the forbidden
  /// symbols, the timeout, or the missing tool. Empty for ok.
  std::string summary;
  std::string log;  ///< "$ argv" then the compiler's stderr and stdout, capped (head + tail)
  std::filesystem::path source_path;  ///< workdir/kernel.cpp or kernel.cu
  /// The loadable artifact (ok only): workdir/kernel.so, copied from the cache on a hit (the
  /// cache entry's path if the copy failed).
  std::filesystem::path artifact;
  bool cached = false;            ///< served from the compile cache
  std::string cache_key;          ///< CompileKey::hash(); empty when the cache is off
  std::vector<std::string> argv;  ///< the compiler command (paths relative to the workdir)
  std::string compiler_version;
  std::chrono::milliseconds wall{0};  ///< the whole compile() call

  bool ok() const { return status == CompileStatus::ok; }
  /// The attempt outcome this result ends in: compile_error, forbidden_api or timeout;
  /// std::nullopt for ok (the attempt goes on) and toolchain_missing (an infrastructure
  /// failure, not an attempt outcome).
  std::optional<Outcome> outcome() const;
};

/// Artifact file name inside the work directory.
inline constexpr const char* kArtifactName = "kernel.so";

/// Builds `source` with `backend` in `workdir` (created if needed); a backend with a build of
/// its own (Backend::build: the triton backend's static scan) through that. The compiler runs with
/// cwd = workdir on relative file names. Throws std::runtime_error only when the work
/// directory or source file cannot be written.
CompileResult compile(const Backend& backend, const std::string& source, const std::filesystem::path& workdir,
                      const CompileOptions& options = {});

}  // namespace kforge::backends
