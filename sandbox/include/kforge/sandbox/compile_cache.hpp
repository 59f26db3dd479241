// kforge/sandbox/compile_cache.hpp — content-addressed cache of compiled candidates
// (docs/judge.md: "a repeated candidate costs nothing").
//
// The key is a SHA-256 over everything that decides the artifact: the source files (names
// and contents, order-independent), the compiler argv (order matters), the compiler's
// version text and the target architecture. An entry is a directory `<dir>/<key>/` holding
// `artifact` (the built file, e.g. a shared object) and `log` (the compiler's output).
// Entries appear atomically (built in a temporary directory, then renamed), so readers never
// see half an entry and two processes storing the same key at once are both fine (the first
// rename wins; the contents are identical by construction). A CompileCache object holds only
// its directory path: it is cheap to copy and thread-safe; the file system is the shared
// state. compiler_version() is memoised per process and thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge::sandbox {

/// What identifies a compile. Pass flags with attempt-specific paths made relative (e.g.
/// `-o kernel.so`, not `-o /runs/r1/attempts/t/0/3/kernel.so`), or nothing will ever hit.
struct CompileKey {
  std::vector<std::pair<std::string, std::string>> sources;  ///< (file name, contents)
  std::vector<std::string> flags;                            ///< compiler argv
  std::string compiler_version;                              ///< e.g. compiler_version("nvcc")
  std::string target_arch;                                   ///< e.g. "sm_90", "x86_64-avx2"

  /// 64 lowercase hex characters.
  std::string hash() const;
};

struct CacheEntry {
  std::filesystem::path artifact;  ///< `<dir>/<key>/artifact`; do not modify it in place
  std::string log;                 ///< the compiler output stored with it
};

class CompileCache {
 public:
  /// `dir` empty: default_dir(). The directory is created on first store.
  explicit CompileCache(std::filesystem::path dir = {});

  /// $XDG_CACHE_HOME/kforge/compile, else $HOME/.cache/kforge/compile, else
  /// <temp dir>/kforge-cache/compile.
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const { return dir_; }

  /// The stored entry for `key` (a CompileKey::hash()), or nullopt on a miss or a malformed key.
  /// An entry whose artifact no longer matches the SHA-256 stored with it is a miss (and is
  /// deleted). The caller still re-runs its post-build checks on a hit (backends::compile runs
  /// the symbol check on every hit).
  std::optional<CacheEntry> lookup(const std::string& key) const;

  /// Copies `artifact` into the cache under `key` together with `log`. Returns true when the
  /// entry exists afterwards (stored by us or, concurrently, by someone else); false with
  /// *error set ("<path>: <reason>") on a file-system failure or a malformed key.
  bool store(const std::string& key, const std::filesystem::path& artifact, const std::string& log,
             std::string* error = nullptr) const;

 private:
  std::filesystem::path dir_;
};

/// `<compiler> --version` (stdout, trimmed), run once per compiler name per process under
/// the sandbox; later calls return the remembered text. Empty when the compiler cannot be
/// run or exits non-zero. Thread-safe; concurrent first calls for one compiler run it once.
std::string compiler_version(const std::string& argv0);

}  // namespace kforge::sandbox
