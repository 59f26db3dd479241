#pragma once
// kforge/backends/profile_step.hpp — the Nsight Compute part of the profile step (issue 11 §1).
//
// For a passing cuda attempt the judge writes the inputs and names two processes
// (RunnerClient::profile_targets): the candidate host's profile mode (the candidate confined
// exactly as when it is judged, one untimed and one profiled call) and the runner's
// reference-call mode. Each runs under `ncu --profile-from-start off` in a process tree of its
// own, after the timed bench and never while anything is timed; its CSV (written by ncu to a
// file in the attempt directory) is parsed by ncu.hpp.
//
// Trust: nothing here decides a verdict or a speedup. The profile is advice to the model: a
// candidate that disturbs its own profile misleads only itself, and the process it runs in
// holds nothing of the judge's.
//
// Thread-safety: NcuProfiler::profile may be called from several threads (its reference cache
// is locked). Callers hold the runner lease of the GPU while profiling, so that no profile
// overlaps a timed bench on that GPU.
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kforge/backends/ncu.hpp"
#include "kforge/backends/runner_client.hpp"

namespace kforge::backends {

/// One target run under ncu.
struct NcuRun {
  ProfileReport report;
  double wall_ms = 0;  ///< ncu's whole run, target included
  std::string error;   ///< "" when the report has kernels; else why not, in one line
};

/// Runs `target` under ncu_argv(metrics, target, opt) through the sandbox (argv only, own
/// process group, `timeout`), with ncu's CSV in opt.report_csv (required), and parses it. An
/// empty report gets an error naming the cause: ncu's own ==ERROR== line (counters not
/// permitted: ERR_NVGPUCTRPERM), a timeout, or the target's failure with its stderr tail.
NcuRun run_ncu(const std::vector<NcuMetric>& metrics, const std::vector<std::string>& target,
               const NcuOptions& opt, std::chrono::milliseconds timeout);

/// The ncu reading of one attempt.
struct NcuProfile {
  ProfileReport candidate;
  ProfileReport reference;  ///< empty when the reference could not be profiled
  double profiler_ms = 0;   ///< wall time of the profile step (ncu runs, both when the reference is new)
  std::string note;         ///< "" when the candidate was profiled; else why not (never a failure)
};

class NcuProfiler {
 public:
  /// At most this many kernel launches of one call are profiled (ncu -c): each costs several
  /// replays, and a call of thousands of launches would take minutes. The note says so.
  static constexpr int kMaxLaunches = 64;
  NcuProfiler(std::filesystem::path ncu, std::vector<NcuMetric> metrics,
              std::chrono::milliseconds timeout = std::chrono::milliseconds(120'000));
  /// Profiles one call of the artifact and (once per task: cached by TaskRef::cache_key) one
  /// of the reference. Files go to `dir`: ncu_candidate.csv, ncu_reference.csv and
  /// profile_reference.json stay; profile_tensors.bin (a copy of the inputs) is removed once
  /// the candidate's run is over.
  NcuProfile profile(RunnerClient& runner, const TaskRef& task, const std::filesystem::path& artifact,
                     const std::filesystem::path& dir);

 private:
  std::filesystem::path ncu_;
  std::vector<NcuMetric> metrics_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::map<std::string, ProfileReport> references_;  ///< by task cache key
};

}  // namespace kforge::backends
