// kforge/benchmarks/generalisation.hpp — whether a run's library kernels hold beyond the shapes
// their prompts showed (issue 24 §3), as a file of the run: <run>/generalisation.json.
//
// `kforge library export` (agent/generalisation_check.hpp) judges every library kernel again on
// unseen shapes and writes the verdicts here; summarize_run reads them into Summary, so report.md,
// report.html, library/index.json and the backend package's manifest all say which kernels
// generalise. A verdict belongs to one kernel: it names the attempt's source_sha, and a later
// library kernel of the task (a resumed run that found a better one) is not covered by it.
// Plain data and file functions; one writer per run directory at a time.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "kforge/benchmarks/metrics.hpp"

namespace kforge {

/// The file's content: the rule, where and when it was judged, and one verdict per task.
struct GeneralisationFile {
  std::string rule;        ///< unseen_rule_text()
  std::string profile;     ///< the profile judged ("ci+unseen"), or "unseen cases" for operators
  std::string device;      ///< the runner's device
  std::string checked_at;  ///< ISO-8601 UTC
  std::map<std::string, Generalisation> kernels;  ///< task id -> verdict
};

/// <run>/generalisation.json.
std::filesystem::path generalisation_path(const std::filesystem::path& run_dir);

/// The documented rule, one sentence (README and the report quote it).
const std::string& unseen_rule_text();

/// Reads the file; nullopt when there is none or it does not parse.
std::optional<GeneralisationFile> read_generalisation(const std::filesystem::path& run_dir);

/// Writes the file (replacing it). Throws std::runtime_error on a file-system failure.
void write_generalisation(const std::filesystem::path& run_dir, const GeneralisationFile& g);

/// The verdict for a library kernel: the file's entry when it judged this attempt (source_sha),
/// else nullopt.
std::optional<Generalisation> generalisation_of(const std::map<std::string, Generalisation>& g,
                                                const std::string& task, const std::string& source_sha);

/// "yes", "no" or "unknown".
std::string generalises_text(const std::optional<bool>& g);

}  // namespace kforge
