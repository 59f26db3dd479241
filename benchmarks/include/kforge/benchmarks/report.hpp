// kforge/benchmarks/report.hpp — a scored run as files and text: summary.json, report.md,
// report.html (report_html.hpp), `kforge compare` and the exported kernel library
// (docs/reports.md, docs/runs.md).
//
// render_* are pure functions of a Summary (Markdown out). write_report (run_report.hpp, with the
// page) and export_library read
// a run directory (its attempts.jsonl and attempt files, without taking the run's lock, so they
// also work on a finished or copied run) and write into it. Number formats: pass@k, compile@k,
// fast_p and rates with 3 decimals (0.917), speedups with 2 decimals and an "x" (1.53x), times in
// ms with 3 decimals, cost in USD with 4 decimals; a value that does not exist (a k larger than
// the samples, no benchmarked kernel) prints as "–".
// Functions are thread-safe on distinct run directories.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/benchmarks/metrics.hpp"

namespace kforge {

/// What a run directory says about how it ran: its settings (manifest.json) and its wall time
/// (from its records). Plain data.
struct RunInfo {
  std::string name;     ///< the run directory's name
  std::string command;  ///< "run" or "eval" (manifest), "" unknown
  /// The manifest's "config", flattened to (option, value) sorted by option; arrays joined by
  /// ","; the runner's device name last ("device name"). Empty when there is no manifest.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string started_at;   ///< the earliest started_at of a record (ISO-8601 UTC), "" none
  std::string finished_at;  ///< the latest finished_at of a record
  /// The run's wall time, seconds (0 = unknown): the manifest's "wall_s" (each invocation of
  /// run or eval, from its start, summed over resumes; runs/run_status.hpp), else, for runs
  /// recorded before it, the first record's start to the last one's end (pauses included).
  double wall_s = 0;
  bool wall_from_manifest = false;  ///< wall_s is the manifest's (invocations only, no pauses)
  /// The manifest's "complete": false while the run has not finished (interrupted, stopped, or
  /// episodes paused at an llm_error); nullopt for runs recorded before it.
  std::optional<bool> complete;
  double attempts_s = 0;              ///< the sum of the records' total_ms, seconds
  int resumes = 0;                    ///< times the run was continued with --resume
  std::vector<std::string> warnings;  ///< an unreadable manifest
};

/// Reads <run_dir>/manifest.json (a missing or bad one gives a warning) and the records' times.
RunInfo read_run_info(const std::filesystem::path& run_dir, const std::vector<AttemptRecord>& records);

/// Seconds since the epoch of an ISO-8601 UTC time "YYYY-MM-DDTHH:MM:SS[.fff]Z"; nullopt when it
/// does not parse.
std::optional<double> parse_iso8601_utc(const std::string& s);

/// The report.md text: headline table (best- and final-attempt scoring), repair curve per turn,
/// SpeedUp_α@k, per-category / difficulty / backend / model tables, outcome histogram, attempt
/// rates, usage and phase times, and a per-task table. `title` heads the page ("" = default);
/// `info`, when given, adds the run's settings and wall time. pass@k appears for every k of
/// the summary's config: in the wide tables for k <= 10 and the largest k, in a pass@k table for
/// all of them when there are more.
std::string render_report_md(const Summary& s, const std::string& title = "", const RunInfo* info = nullptr);

/// Side by side: headline (pass@k, compile@k, fast_p, geomean speedup, usage, with B − A),
/// repair curve per turn, and per-category pass@1 / fast_1 / speedup, for `kforge compare`.
std::string render_compare(const Summary& a, const Summary& b, const std::string& name_a,
                           const std::string& name_b);

/// Two runs restricted to the tasks both attempted (by task id: two backends or models of one
/// task compare), each scored alone. Plain data.
struct ComparedRuns {
  std::filesystem::path dir_a, dir_b;
  std::string name_a, name_b;
  std::vector<AttemptRecord> records_a, records_b;  ///< only the common tasks
  Summary a, b;                                     ///< scores of those records
  RunInfo info_a, info_b;
  std::vector<std::string> only_a, only_b;  ///< task ids dropped: attempted by one run only
  std::size_t common = 0;                   ///< task ids both runs attempted
  /// Why the scores are not measured alike: each judging condition that differs ("profile: ci in
  /// A, default in B"; compare_conditions), and each run that has not finished.
  std::vector<std::string> not_alike;
};

/// The judging conditions a compare holds equal (their difference changes what a score means,
/// unlike the model or prompt options a comparison is made to vary): the suite, the shape
/// profile, trials, reps, bench, perf_inputs, allow_precision, allow_ops, the baseline and the
/// device name. Manifest config keys, as RunInfo::settings names them.
const std::vector<std::string>& compare_conditions();

/// Loads both runs and keeps the common tasks. Throws as load_attempts.
ComparedRuns compare_runs(const std::filesystem::path& a, const std::filesystem::path& b);

/// The lines saying which tasks compare_runs dropped (none when the task sets are equal).
std::vector<std::string> compare_drop_notes(const ComparedRuns& c);

/// One common task in both runs (over their backends and models).
struct TaskDiff {
  std::string task, category;
  struct Side {
    bool present = false;
    int samples = 0, passed_samples = 0;
    int first_pass_turn = 0;  ///< 0 = never
    double best_speedup = 0;  ///< 0 = none credited
  } a, b;
  std::string change;  ///< "gained" (B passes, A not), "lost", "both", "neither"
};

/// Every common task, sorted by id.
std::vector<TaskDiff> task_diffs(const ComparedRuns& c);

/// render_compare of the common tasks, preceded by the runs' differences of judging conditions
/// and completeness (ComparedRuns::not_alike, a bold warning), what was dropped (a warning line when the
/// task sets differ; "no task in common" when they are disjoint), and followed by the per-task
/// diff (pass and best speedup in each run, for tasks whose result differs) and the
/// equal-budget table (pass@k against LLM calls and tokens per task).
std::string render_compare_md(const ComparedRuns& c);

/// Loads <run_dir>/attempts.jsonl (load warnings go into Summary::warnings) and scores it.
/// `records`, when given, receives the loaded records.
/// Throws as load_attempts (RecordError for a bad line).
Summary summarize_run(const std::filesystem::path& run_dir, const MetricsConfig& config = {},
                      std::vector<AttemptRecord>* records = nullptr);

struct LibraryExport {
  std::filesystem::path dir;         ///< <run>/library
  int exported = 0;                  ///< tasks written
  std::vector<std::string> missing;  ///< "<task>: <why>" for best attempts whose source is missing
};

/// One task's library kernel: the best correct kernel of the task (TaskResult::best; of several
/// backends or models, the one of highest speedup), its attempt directory and its source.
struct LibraryKernel {
  const TaskResult* result = nullptr;  ///< points into the Summary given to library_kernels
  std::filesystem::path attempt_dir;
  std::string file_name;  ///< kernel.cu, kernel.cpp or kernel.py
  std::string source;     ///< the candidate's own code (an operator task's adapter cut off)
};

/// The library's kernel of every task that has a correct one: the attempt directory's
/// kernel.cu / kernel.cpp / kernel.py (the backend's own first: cuda .cu, cpu .cpp, triton .py),
/// else its build/ copy (`kforge eval` keeps only that one). Tasks whose source is missing are
/// appended to `missing` ("<task>: <why>") and left out. The one rule for what the library holds.
std::map<std::string, LibraryKernel> library_kernels(const std::filesystem::path& run_dir, const Summary& s,
                                                     std::vector<std::string>* missing = nullptr);

/// Copies the best correct kernel of each task (library_kernels) to <run>/library/<task>/:
/// its source (kernel.cu, kernel.cpp or kernel.py, whichever the attempt directory holds; the
/// backend's own first: cuda .cu, cpu .cpp, triton .py),
/// result.json (the attempt's own, when it has one) and attempt.json (its AttemptRecord), and
/// writes library/index.json listing every exported task (with `generalises` true/false/null and
/// `generalisation`, the reason, from <run>/generalisation.json when it judged this kernel). When one task
/// was solved by several backends or models, the one of highest speedup is exported. Stale entries of an
/// earlier export are replaced. Throws std::runtime_error on file-system failure.
LibraryExport export_library(const std::filesystem::path& run_dir);

}  // namespace kforge
