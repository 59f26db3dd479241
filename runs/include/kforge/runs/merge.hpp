// kforge/runs/merge.hpp — merges the run directories of shards (`kforge run --shard K/N`) into
// one run (`kforge merge OUT RUN...`, issue 20 §4); `kforge report OUT` then scores it as usual.
//
// What merge_runs checks and does:
//   - Every input is a run (manifest.json with a "config" object) that no process is writing:
//     it holds a shared flock on each input's .lock for the whole merge, so a writer that holds
//     it is reported, and none can start while the merge reads.
//   - The manifests agree: the same "command" and every "config" field equal except "shard"
//     (a mismatch names the field and both values). All shards have the same N; a record whose
//     (task, sample) is not owned by its run's shard (shard.hpp) is refused.
//   - Attempts are de-duplicated by key (task, sample, turn). Within one input the later record
//     supersedes the earlier (as `--resume` does when it asks an llm_error / infra_error turn
//     again). Across inputs, a record identical in every field to the kept one is a duplicate
//     (the same shard given twice); a model outcome supersedes an llm_error / infra_error; two
//     different model outcomes for one key are a conflict and refused (the same episode judged
//     in two runs: merge only one of them).
//   - OUT must not exist or be empty. It is written as a RunDir: manifest.json (the first
//     input's, config.shard "0/1", and "merged_from" listing each input with its shard, runner,
//     creation time and record count; "missing_shards" when some K of N are absent),
//     attempts.jsonl (the kept records, ordered by key), each kept attempt's directory
//     (attempts/<task>/<sample>/<turn>/, copied from its input) and unusable.json (the union;
//     the first reason of a task wins).
// A merged run is an unsharded run: `kforge run --resume OUT` continues its unfinished
// episodes, those of missing shards included.
//
// Errors: an expected failure (not a run, a mismatch, a conflict, OUT not empty, I/O) is a
// MergeError value naming its kind, the field or path, and both sides; nothing is written to
// OUT before every input has been read and checked. Not thread-safe per call (file system).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

enum class MergeErrorKind {
  no_inputs,            ///< nothing to merge
  not_a_run,            ///< no or unreadable manifest.json / attempts.jsonl
  run_locked,           ///< a process is writing the input (its .lock is held)
  config_mismatch,      ///< the manifests differ in a field other than config.shard
  shard_mismatch,       ///< different N, a bad shard field, or a record outside its shard
  conflicting_attempt,  ///< two different model outcomes for one (task, sample, turn)
  output_not_empty,     ///< OUT exists and is not an empty directory
  io_error,             ///< writing OUT failed
};
std::string_view to_string(MergeErrorKind k);

struct MergeError {
  MergeErrorKind kind;
  std::string field;    ///< e.g. "config.samples", "config.shard", "attempts.jsonl"; "" when none
  std::string message;  ///< one line naming the inputs and values involved
};

struct MergeStats {
  std::size_t inputs = 0;
  std::size_t records_read = 0;       ///< every record of every input
  std::size_t attempts = 0;           ///< records written to OUT
  std::size_t duplicates = 0;         ///< identical records of one key in two inputs, dropped
  std::size_t superseded = 0;         ///< records replaced by a later or a model-outcome record
  std::vector<int> missing_shards;    ///< K of N not among the inputs
  std::vector<std::string> warnings;  ///< torn last lines, differing runners, unusable reasons
};

struct MergeResult {
  std::optional<MergeError> error;  ///< set when the merge was refused or failed
  MergeStats stats;
  bool ok() const { return !error; }
};

/// Merges the runs `inputs` into the new run `out` (see above).
MergeResult merge_runs(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);

}  // namespace kforge
