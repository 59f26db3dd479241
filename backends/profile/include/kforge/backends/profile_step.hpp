#pragma once
// kforge/backends/profile_step.hpp — the Nsight Compute part of the profile step (issue 11 §1).
//
// For a passing cuda attempt the judge writes the inputs and names two processes
// (RunnerClient::profile_targets): the candidate host's profile mode (kforge-host --profile for
// a shared object, host.py --profile for a Triton module: the candidate confined as when it is
// judged, with what ncu needs; one untimed and one profiled call) and the runner's
// reference-call mode. Each runs under `ncu --profile-from-start off` in a process tree of its
// own, after the timed bench and never while anything is timed; its CSV (written by ncu to a
// file in the attempt directory) is parsed by ncu.hpp.
//
// Trust: nothing here decides a verdict or a speedup. The profile is advice to the model: a
// candidate that disturbs its own profile misleads only itself, and the process it runs in
// holds nothing of the judge's.
//
// Cost (issue 21 §4): the candidate runs under ncu's cheapest fitting replay mode
// (choose_replay_mode: kernel replay unless the saved copy would not fit on the device), huge
// inputs are profiled scaled down (NcuProfilerOptions::scale; the note says so), the whole
// step has a wall-clock budget (a skipped run is a note), and the reference is profiled at most
// once per task, shape profile, GPU, driver and toolchain (kept across runs beside the compile
// cache: NcuReferenceCache).
//
// Thread-safety: NcuProfiler::profile may be called from several threads (its reference cache
// is locked). The step's device work holds the device's timed lock (timed_lock.hpp,
// RunnerClient::hold_timed), so that no profile overlaps a timed bench of any runner on that
// GPU: the judge's files are written under a shared hold, both ncu runs are started before the
// exclusive one and wait at their gates (NcuLaunch) until it is held, then run one after the
// other, the reference's gate opening only once the candidate's process tree is gone.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/backends/ncu.hpp"
#include "kforge/backends/runner_client.hpp"

namespace kforge::backends {

/// One target run under ncu.
struct NcuRun {
  ProfileReport report;
  double wall_ms = 0;  ///< from the target's gate opening (NcuLaunch::finish) to ncu's exit
  std::string error;   ///< "" when the report has kernels; else why not, in one line
};

/// One target under ncu, started ahead of its turn (issue 41 §4): ncu, the target's process and
/// its imports start at once, and the target waits at its gate (profile_gate.hpp), before any
/// CUDA call, until finish() opens it, so that only its device work is paid while the profile
/// step holds the device's timed lock. Destroyed unfinished, the run is killed. One owner; not
/// thread-safe.
class NcuLaunch {
 public:
  virtual ~NcuLaunch() = default;
  /// Opens the gate and waits for the run's end, at most `limit` from now; then kills it. The
  /// report is parsed from opt.report_csv; an empty one gets an error naming the cause: ncu's
  /// own ==ERROR== line (counters not permitted: ERR_NVGPUCTRPERM; "The application returned an
  /// error code" followed by the profiled process's own last output lines), the limit, or the
  /// target's failure with its stderr tail.
  virtual NcuRun finish(std::chrono::milliseconds limit) = 0;
  /// Waits, at most `limit`, until the target stands at its gate: it printed
  /// kProfileGateReadyLine (profile_gate.hpp) before it began to wait, so its start-up, ncu's
  /// and its imports are over. true at once for a launch that runs nothing ahead (a fake's);
  /// false when the run ended or the limit passed first (finish() then says why). The profile
  /// step calls it before it takes the device's timed lock, so that no start-up is paid under it.
  virtual bool ready(std::chrono::milliseconds limit) {
    (void)limit;
    return true;
  }
};

/// Starts `target` under ncu_argv(metrics, target, opt) through the sandbox (argv only, own
/// process group, the network namespace shared: ncu talks to its target over loopback), with
/// ncu's CSV in opt.report_csv (required). Beside it: <report_csv>.gate, the gate file
/// ($KFORGE_PROFILE_GATE, created by finish()), and <report_csv>.tmp/, the run's scratch
/// directory ($TMPDIR and $KFORGE_PROFILE_SCRATCH: ncu's lock file, the candidate host's only
/// writable place), both removed when the run ends. Runs started side by side need distinct
/// report_csv paths. The target's stdout is read in lines of at most 64 KiB, only the last
/// 64 KiB kept.
std::unique_ptr<NcuLaunch> start_ncu(const std::vector<NcuMetric>& metrics,
                                     const std::vector<std::string>& target, const NcuOptions& opt);

/// start_ncu(...)->finish(timeout): a run whose gate opens at once.
NcuRun run_ncu(const std::vector<NcuMetric>& metrics, const std::vector<std::string>& target,
               const NcuOptions& opt, std::chrono::milliseconds timeout);

/// Starts one target under ncu: start_ncu in kforge, a fake in tests.
using NcuStartFn = std::function<std::unique_ptr<NcuLaunch>(
    const std::vector<NcuMetric>&, const std::vector<std::string>&, const NcuOptions&)>;

/// One run of a target under ncu, from start to end (a fake's shape).
using NcuRunFn = std::function<NcuRun(const std::vector<NcuMetric>&, const std::vector<std::string>&,
                                      const NcuOptions&, std::chrono::milliseconds)>;

/// An NcuStartFn for fakes: nothing runs ahead; each launch calls `run` in finish(), with its
/// limit.
NcuStartFn deferred_start(NcuRunFn run);

/// The reference's ncu reports kept across runs (issue 21 §4): one CSV per key in a directory
/// beside the compile cache (default_dir(): <kforge cache>/ncu_reference). A reference profile
/// depends only on the key's parts, so a later run reads it instead of profiling the reference
/// again. Entries are written to a temporary name and renamed (safe between processes).
class NcuReferenceCache {
 public:
  explicit NcuReferenceCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  /// sandbox::CompileCache::default_dir()'s parent / "ncu_reference" ($XDG_CACHE_HOME/kforge or
  /// ~/.cache/kforge).
  static std::filesystem::path default_dir();
  /// SHA-256 over: the task's cache key (its id, the source as sent, which carries the shape
  /// profile's constants, and the module mode), the environment line (GPU, driver, toolchain:
  /// NcuProfiler::environment) and the names of the metrics the reference is profiled with
  /// (reference_metrics).
  static std::string key(const TaskRef& task, const std::string& environment,
                         const std::vector<NcuMetric>& metrics);
  std::optional<ProfileReport> get(const std::string& key) const;  ///< nullopt: absent or empty
  void put(const std::string& key, const std::string& csv) const;  ///< best effort (a warning)
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

/// The ncu reading of one attempt.
struct NcuProfile {
  ProfileReport candidate;
  ProfileReport reference;  ///< empty when the reference could not be profiled
  /// The step's time under the device's timed lock: the ncu runs from their gates' opening (both
  /// when the reference is new); their start-up ran before, beside other runners' work.
  double profiler_ms = 0;
  std::string note;               ///< "" when the candidate was profiled; else why not (never a failure)
  std::string replay_mode;        ///< the candidate's ncu --replay-mode ("kernel" or "application")
  bool reference_cached = false;  ///< the reference's report came from this run's or the disk cache
  double lock_wait_ms = 0;        ///< waited for the device's timed lock (other runners' timed work)
};

/// A smaller version of a task for its profile, and what changed in words.
struct ScaledTask {
  TaskRef task;
  std::string description;  ///< "batch_size 4096->512, dim 393216->49152: 96 MiB of inputs"
};
/// Scales a task's inputs to at most `target_bytes` (the agent's: benchmarks/shapes.hpp
/// scale_to_bytes, which backends do not link); nullopt when its shapes are not understood or
/// nothing shrinks.
using ScaleTaskFn = std::function<std::optional<ScaledTask>(const TaskRef&, double target_bytes)>;

struct NcuProfilerOptions {
  /// Wall clock for one attempt's ncu runs under the device's timed lock (the candidate's and,
  /// when not cached, the reference's), counted from the lock's hold. What is left when a run's
  /// gate opens is its timeout; a run that cannot start or finish within it is skipped with a
  /// note saying so.
  std::chrono::milliseconds budget{120'000};
  /// Reference reports across runs; empty: this process's memory only.
  std::filesystem::path reference_cache;
  NcuStartFn start;                          ///< empty: start_ncu
  std::function<std::string()> environment;  ///< GPU, driver, toolchain in one line; empty: probed
  /// Inputs above full_input_bytes are profiled on smaller ones (this scaling, down to
  /// scaled_input_bytes), the same for the candidate and the reference, and the note says so;
  /// empty: always the task's own shapes. ncu replays each launch once per pass, and a call on
  /// a GPU's worth of inputs made the candidate's run alone outlast the budget (KernelBench
  /// 19_ReLU, 6.4 GB of inputs: over 120 s on an H100). 256 MiB stays several times larger than
  /// any GPU's L2 (50 MB on an H100), so a streaming kernel's memory behaviour, coalescing,
  /// occupancy and stalls read as at full size; what changes is the kernels' times (those of the
  /// smaller call) and grids that scale with the inputs (fewer blocks).
  ScaleTaskFn scale;
  double full_input_bytes = 1024.0 * 1024 * 1024;
  double scaled_input_bytes = 256.0 * 1024 * 1024;
};

/// One attempt's profile between NcuProfiler::start and NcuProfiler::finish: its ncu runs
/// started, each waiting at its gate. Destroyed unfinished, its runs are killed (nothing of them
/// touched the device). One owner; not thread-safe.
struct NcuStarted {
  NcuProfile profile;                    ///< its note says why nothing runs (then no launch)
  std::unique_ptr<NcuLaunch> candidate;  ///< null: nothing to run (the note says why)
  std::unique_ptr<NcuLaunch> reference;  ///< null: cached (profile.reference) or not run
  std::string key;                       ///< the reference's NcuReferenceCache::key
  std::filesystem::path dir;             ///< the attempt's profile directory
  std::string scaled_note;               ///< ScaledTask::description when scaled, else ""
};

class NcuProfiler {
 public:
  /// At most this many kernel launches of one call are profiled (ncu -c): each costs several
  /// replays, and a call of thousands of launches would take minutes. The note says so.
  static constexpr int kMaxLaunches = 64;
  NcuProfiler(std::filesystem::path ncu, std::vector<NcuMetric> metrics, NcuProfilerOptions options = {});
  /// Profiles one call of the artifact and (once per task and environment: cached by
  /// NcuReferenceCache::key, in memory and, when configured, on disk) one of the reference,
  /// within the options' budget. Both runs are started before the device's timed lock is
  /// held and wait at their gates (NcuLaunch); the candidate's runs first, the reference's once
  /// the candidate's process tree is gone. Files go to `dir`: ncu_candidate.csv, ncu_reference.csv and
  /// profile_reference.json stay; profile_tensors.bin (a copy of the inputs) is removed once
  /// the candidate's run is over. The candidate's replay mode: choose_replay_mode (a passing
  /// candidate's call is idempotent: the judge verified it; kforge-host restarts cheaply, the
  /// Triton host does not); caches are flushed before every pass (--cache-control all). Inputs
  /// above the options' full_input_bytes: both calls on the scaled task (options' scale).
  /// `host`: the candidate host the artifact's backend needs (Backend::host_kind).
  NcuProfile profile(RunnerClient& runner, const TaskRef& task, const std::filesystem::path& artifact,
                     const std::filesystem::path& dir, HostKind host);
  /// profile() in two halves, so that the runs' start-up can hide behind other work of the same
  /// attempt (its bench; issue 41 §4): start() writes the judge's files (under a shared hold of
  /// the device's timed lock) and starts both runs, which wait at their gates; finish() waits
  /// (outside the lock, at most the budget) until both stand at their gates (NcuLaunch::ready),
  /// then takes the exclusive hold and runs them. profile() == finish(start()).
  std::unique_ptr<NcuStarted> start(RunnerClient& runner, const TaskRef& task,
                                    const std::filesystem::path& artifact, const std::filesystem::path& dir,
                                    HostKind host);
  NcuProfile finish(RunnerClient& runner, NcuStarted& started);
  /// The environment line of the cache key (probed once: the runner's hello, `nvidia-smi`'s
  /// driver version, `ncu --version`).
  std::string environment(RunnerClient& runner);

 private:
  std::filesystem::path ncu_;
  std::vector<NcuMetric> metrics_;            ///< the candidate's
  std::vector<NcuMetric> reference_metrics_;  ///< the reference's: reference_metrics(metrics_)
  NcuProfilerOptions opt_;
  std::mutex mu_;
  std::map<std::string, ProfileReport> references_;  ///< by NcuReferenceCache::key
  std::string environment_;                          ///< probed once (under mu_)
  double device_memory_ = -1;                        ///< the runner's GPU memory, probed once; 0: unknown
  double device_memory(RunnerClient& runner);
  /// The scaled task when `task`'s inputs are above opt_.full_input_bytes and opt_.scale shrinks them;
  /// its description is the record's note.
  std::optional<ScaledTask> scaled(RunnerClient& runner, const TaskRef& task);
  /// The candidate's run with `limit`, into p (its report, profiler_ms, a note when it fell short).
  void finish_candidate(NcuLaunch& launch, std::chrono::milliseconds limit, NcuProfile& p);
  /// The reference's report of `key` from this profiler's memory or the on-disk cache; nullopt:
  /// not profiled yet.
  std::optional<ProfileReport> cached_reference(const std::string& key);
  /// The reference's run with what is left of the budget (`limit`), into p.reference, cached
  /// under `key` when it has kernels; a note when it could not run or failed.
  void finish_reference(NcuLaunch& launch, const std::string& key, const std::filesystem::path& report_csv,
                        std::chrono::milliseconds limit, NcuProfile& p);
};

}  // namespace kforge::backends
