// kforge/benchmarks/report.hpp — a scored run as files and text: summary.json, report.md,
// `kforge compare` and the exported kernel library (DESIGN.md §1, §9, §10).
//
// render_* are pure functions of a Summary (Markdown out). write_report and export_library read
// a run directory (its attempts.jsonl and attempt files, without taking the run's lock, so they
// also work on a finished or copied run) and write into it. Number formats: pass@k, compile@k,
// fast_p and rates with 3 decimals (0.917), speedups with 2 decimals and an "x" (1.53x), times in
// ms with 3 decimals, cost in USD with 4 decimals; a value that does not exist (a k larger than
// the samples, no benchmarked kernel) prints as "–".
// Functions are thread-safe on distinct run directories.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kforge/benchmarks/metrics.hpp"

namespace kforge {

/// The report.md text: headline table (best- and final-attempt scoring), repair curve per turn,
/// SpeedUp_α@k, per-category / difficulty / backend / model tables, outcome histogram, attempt
/// rates, usage and phase times, and a per-task table. `title` heads the page ("" = default).
std::string render_report_md(const Summary& s, const std::string& title = "");

/// Side by side: headline (pass@k, compile@k, fast_p, geomean speedup, usage, with B − A),
/// repair curve per turn, and per-category pass@1 / fast_1 / speedup, for `kforge compare`.
std::string render_compare(const Summary& a, const Summary& b, const std::string& name_a,
                           const std::string& name_b);

/// Loads <run_dir>/attempts.jsonl (load warnings go into Summary::warnings) and scores it.
/// Throws as load_attempts (RecordError for a bad line).
Summary summarize_run(const std::filesystem::path& run_dir, const MetricsConfig& config = {});

/// summarize_run, then writes <run_dir>/summary.json and <run_dir>/report.md. Returns the summary.
Summary write_report(const std::filesystem::path& run_dir, const MetricsConfig& config = {});

struct LibraryExport {
  std::filesystem::path dir;         ///< <run>/library
  int exported = 0;                  ///< tasks written
  std::vector<std::string> missing;  ///< "<task>: <why>" for best attempts whose source is missing
};

/// Copies the best correct kernel of each task (TaskResult::best) to <run>/library/<task>/:
/// its source (kernel.cu, kernel.cpp or kernel.py, whichever the attempt directory holds; the
/// backend's own first: cuda .cu, cpu .cpp, triton .py),
/// result.json (the attempt's own, when it has one) and attempt.json (its AttemptRecord), and
/// writes library/index.json listing every exported task. When one task was solved by several
/// backends or models, the one of highest speedup is exported. Stale entries of an earlier
/// export are replaced. Throws std::runtime_error on file-system failure.
LibraryExport export_library(const std::filesystem::path& run_dir);

}  // namespace kforge
