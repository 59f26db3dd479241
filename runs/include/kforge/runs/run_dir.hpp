// kforge/runs/run_dir.hpp — a run directory on disk (docs/runs.md).
//
// Layout of <run>/:
//   manifest.json    config, versions, GPU, toolchain, seeds, schema_version (given by the caller)
//   attempts.jsonl   one AttemptRecord per line, appended as each attempt finishes
//   attempts/<task>/<sample>/<turn>/   the attempt's files: prompt.md, response.txt, kernel.cu
//                    or kernel.cpp, build.log, result.json (task ids with '/' become subdirs)
//   .lock            flock()ed by the one process that writes the run
//   summary.json, report.md, library/  written by scoring (benchmarks/report.hpp)
//
// Durability: append() writes the whole line with one write() on an O_APPEND descriptor and
// fsyncs before returning, so a finished attempt survives a crash or SIGKILL and the file never
// holds half a line unless the machine itself dies mid-write. Loading ignores (with a warning)
// a torn last line; resuming also cuts such a tail off before appending.
//
// Ownership and thread-safety: a RunDir owns the lock and the attempts.jsonl descriptor for its
// lifetime (move-only; the lock is released on destruction). append(), write_attempt_file(),
// finished_keys() and load_attempts() may be called from many threads at once (append is
// serialised by a mutex). Two RunDir objects — in one process or two — cannot hold the same run:
// the second create/open throws. Reading a run for scoring needs no RunDir: use the free
// load_attempts(path), which takes no lock.
//
// Errors: a broken directory (exists and is not a run, unreadable manifest, locked by another
// writer, I/O failure on append) throws std::runtime_error naming the path; a malformed record
// throws RecordError naming the file, line and field.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/runs/attempt.hpp"

namespace kforge {

/// What load_attempts found: the records in file order, and warnings (a torn last line).
struct LoadedAttempts {
  std::vector<AttemptRecord> records;
  std::vector<std::string> warnings;
};

/// Reads <run_dir>/attempts.jsonl without locking (scoring, replay, compare). A missing file
/// yields no records. Blank lines are skipped. A last line without its '\n' that does not
/// parse is a torn write: ignored, with a warning (also logged). Any other bad line throws
/// RecordError whose message names the file, the 1-based line and the field.
LoadedAttempts load_attempts(const std::filesystem::path& run_dir);

/// attempts/<task>/<sample>/<turn> as a relative path (the record's attempt_dir).
/// Throws std::invalid_argument when the task id is not a valid one (common/task_id.hpp: empty,
/// absolute, a "", "." or ".." component, a character outside [A-Za-z0-9._-/]), or sample < 0 or
/// turn < 1.
std::filesystem::path attempt_rel_path(const std::string& task, int sample, int turn);

class RunDir {
 public:
  /// Makes a new run at `dir` (creating parents), takes its lock and writes manifest.json.
  /// `manifest` must be a JSON object; "schema_version" (kRunSchemaVersion) and "created_at"
  /// are added when absent. Throws std::runtime_error when `dir` exists and is not empty
  /// (resume it with open_for_resume instead) or is locked, std::invalid_argument when the
  /// manifest is not an object.
  static RunDir create(const std::filesystem::path& dir, const nlohmann::json& manifest);

  /// Opens an existing run to continue it: takes the lock, reads manifest.json, reads
  /// attempts.jsonl (finished_keys() then lists what is done) and cuts off a torn last line.
  /// Throws std::runtime_error when there is no manifest.json, it is not valid JSON, its
  /// schema_version is newer than kRunSchemaVersion, or another process holds the lock.
  static RunDir open_for_resume(const std::filesystem::path& dir);

  RunDir(RunDir&&) noexcept;
  RunDir& operator=(RunDir&&) noexcept;
  ~RunDir();

  const std::filesystem::path& path() const;
  const nlohmann::json& manifest() const;

  /// Replaces manifest.json (atomically: temp file + rename), keeping its schema_version and
  /// created_at; a resumed run records its effective configuration this way. Throws
  /// std::invalid_argument when `manifest` is not an object, std::runtime_error on I/O errors.
  void update_manifest(const nlohmann::json& manifest);

  /// Appends one record as one line of attempts.jsonl, flushed and fsynced before returning.
  /// Throws std::invalid_argument for a record without task, with sample < 0 or turn < 1;
  /// std::runtime_error when the write or fsync fails.
  void append(const AttemptRecord& r);

  /// <run>/attempts/<task>/<sample>/<turn>/ (absolute; not created). Throws as attempt_rel_path.
  std::filesystem::path attempt_path(const std::string& task, int sample, int turn) const;

  /// Writes <attempt_path>/<name> atomically (creating the directories) and returns its path,
  /// through common/beneath.hpp: a symbolic link planted anywhere below the run is refused
  /// (std::runtime_error), never followed. `name` must be a plain file name (no '/', not "." or
  /// ".."): std::invalid_argument.
  std::filesystem::path write_attempt_file(const std::string& task, int sample, int turn,
                                           std::string_view name, std::string_view content) const;

  /// write_attempt_file of `value` as indented JSON, every string made JSON-safe first (invalid
  /// UTF-8 bytes written as \xNN: common/json_text.hpp), so a result holding compiler output or
  /// a kernel's bytes never fails to serialise. Throws as write_attempt_file.
  std::filesystem::path write_attempt_json(const std::string& task, int sample, int turn,
                                           std::string_view name, const nlohmann::json& value) const;

  /// Every record of the run, in file order (what was there at open plus what was appended).
  std::vector<AttemptRecord> load_attempts() const;

  /// The (task, sample, turn) of every recorded attempt, so a resumed run skips them.
  std::set<AttemptKey> finished_keys() const;
  bool is_finished(const AttemptKey& k) const;

  /// Number of records (at open plus appended since).
  std::size_t attempt_count() const;

 private:
  struct Impl;
  explicit RunDir(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
