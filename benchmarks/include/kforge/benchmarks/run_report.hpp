// kforge/benchmarks/run_report.hpp — the report files of a run directory: summary.json,
// report.md (report.hpp) and report.html (report_html.hpp), written together by `kforge report`,
// at the end of `kforge run` and `kforge eval`. Above both report.hpp and report_html.hpp (the
// page uses the report's types, so the report cannot call the page). Writes files in the run
// directory; not thread-safe for one directory.
#pragma once

#include <filesystem>

#include "kforge/benchmarks/report.hpp"

namespace kforge {

/// summarize_run, then writes <run_dir>/summary.json, <run_dir>/report.md (with the run's
/// settings and wall time) and <run_dir>/report.html (report_html.hpp; without plots, saying so,
/// where the charting library is missing). Returns the summary.
Summary write_report(const std::filesystem::path& run_dir, const MetricsConfig& config = {});

}  // namespace kforge
