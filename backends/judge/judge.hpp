// backends/judge/judge.hpp — the judge's side of a check and a bench (internal to
// kforge-runner; docs/judge.md).
//
// Candidate code never runs in this process. For each check and each bench the judge starts
// a fresh kforge-host (CandidateHost), shares inputs and outputs with it (Exchange), and
// keeps everything that decides the verdict to itself: the pristine inputs and parameters,
// the reference's outputs (computed while the host is frozen), the tolerances, the clock.
//
// Check: per trial, fresh inputs under seed+i; the reference runs on the judge's pristine
// copy; the candidate runs on a copy in the exchange; afterwards (host frozen) canaries,
// bitwise input/parameter modification (a NaN where a number was counts), and the outputs
// are checked.
// Bench: the exchange holds K input/output sets (enough bytes that the L2 cache cannot keep
// them); every batch of K calls runs on freshly drawn inputs in an order the judge picks, is
// timed by the judge's clock from the request to the host's reply (the host waits for the
// device before replying; a host that replies early is caught by the verification), and one
// set chosen in secret beforehand is compared with the reference afterwards (a mismatch is
// output_mismatch/bench_only). The host is then killed, and only then is the reference timed
// the same way on inputs the candidate never saw. Functions throw only on the judge's own
// failures (the caller reports them as infra errors). Defined by concern: check.cpp
// (check_candidate), bench.cpp (bench_candidate), testblock.cpp (check_testblock), judge.cpp
// (the candidate's session, prewarm_host, the scratch directories); what those files share is
// in judge_internal.hpp.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "candidate_host.hpp"
#include "exchange.hpp"
#include "kforge/backends/host_kind.hpp"
#include "kforge/backends/runner_protocol.hpp"
#include "kforge/backends/timed_lock.hpp"
#include "lead_in.hpp"
#include "runner.hpp"
#include "zygote.hpp"

namespace kforge::runner {

struct JudgeContext {
  at::Device device{at::kCPU};
  std::string host_exe;  ///< kforge-host (HostKind::native: shared-object artifacts)
  /// The Triton candidate host (HostKind::python: Python-module artifacts): the interpreter with torch and
  /// triton, backends/triton/host.py, libkforge_pyconfine.so, and the directory where the host
  /// caches Triton's driver module and its own warm-up kernel (written before confinement).
  std::string python;
  std::string triton_host;
  std::string pyconfine_lib;
  std::string triton_cache;
  /// The runner's Triton zygotes (zygote.hpp): Triton hosts are forked warm from one; null:
  /// spawned (KFORGE_TRITON_ZYGOTE=0).
  Zygotes* zygotes = nullptr;
  int64_t l2_bytes = 0;  ///< the device's L2 (cpu: 0, a fixed working-set target is used)
  /// The device's peak bandwidth in bytes/s (measure_peak_bandwidth), for the speed-of-light
  /// bound; 0 = not known (no bound).
  double peak_bytes_per_s = 0;
  /// The device's lock for timed work (timed_lock.hpp) and its name. The client holds it for a
  /// whole `bench` (`timed_lock_held`), and shared for a check (`timed_lock_shared`): the check
  /// then does not calibrate the host (timed work under a shared hold would wait for every other
  /// runner's check; its bench opens a host of its own, calibrated under the bench's hold).
  /// Otherwise a check's judge takes the lock itself for the calibration, waiting at most
  /// kCalibrationLockWait (a busy lock is no reason to hold a check up: that calibration is then
  /// not used for a bench). Null: no lock (tests).
  kforge::backends::TimedLock* timed_lock = nullptr;
  std::string timed_lock_name;
  bool timed_lock_held = false;
  bool timed_lock_shared = false;
};

/// What the Triton host needs to build a KernelBench `ModelNew` candidate (get_init_inputs(),
/// the state's names in the exchange's order after the inputs, the module mode): the judged
/// host's `model` line and the profile mode's profile_model.json.
nlohmann::json model_spec(LoadedTask& task);

/// backends/triton/testblock.py beside the Triton host (ctx.triton_host): the gold-agreement
/// code the judge's reference and the Triton host share.
std::string testblock_path(const JudgeContext& ctx);

/// The candidate's command line under Nsight Compute: `kforge-host --profile <artifact> <device>
/// <tensors>` for HostKind::native; for HostKind::python the Triton host's profile mode,
/// `<python> -I -B host.py --profile <artifact> <device> <tensors> <pyconfine.so> <model file>
/// <Triton cache>` (backends/triton/profile_host.py). Throws std::runtime_error when this
/// runner has no Triton host.
std::vector<std::string> profile_candidate_argv(const JudgeContext& ctx, const std::string& artifact,
                                                kforge::backends::HostKind host, const std::string& device,
                                                const std::string& tensors, const std::string& model_file);

/// The `profile_setup` request (runner_protocol.hpp): in req.dir, profile_tensors.bin (the
/// task's inputs under req.seed, its parameters and output specs), profile_reference.json
/// (`load_request` plus the seed as its profile_seed) and, for a Triton candidate,
/// profile_model.json (model_spec); replies with the two command lines to run under Nsight
/// Compute: the candidate's (profile_candidate_argv) on req.candidate, and this runner's
/// --profile-reference mode. Throws std::runtime_error when a file cannot be written.
kforge::backends::protocol::ProfileSetupReply profile_setup(
    LoadedTask& task, kforge::backends::protocol::LoadRequest load_request,
    const kforge::backends::protocol::ProfileSetupRequest& req, const JudgeContext& ctx,
    const std::string& runner_exe);

/// One candidate's host and the exchange it maps: created by a check, handed to the bench of
/// the same artifact (one fresh host per candidate, not per request), destroyed before the
/// reference is timed or when anything else is asked of the judge.
/// A directory removed with everything in it when this is destroyed (empty: none).
///
/// The runner uses POSIX calls, not std::filesystem, for its files: a PyPI LibTorch (2.11)
/// exports its own copy of libstdc++'s filesystem code, the judge's calls bind to it, and its
/// remove_all jumps through a null pointer (the judge's SIGSEGV after every Triton candidate on
/// the H100, before this was known).
struct ScratchDir {
  std::string path;
  ScratchDir() = default;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
};

/// Where the judge creates what a candidate host must reach (its empty working directory, the
/// Triton scratch and cache directories, the zygote's): $TMPDIR when it is absolute and every
/// directory down to it is searchable by any user, else /tmp. The host runs as another user
/// where the judge is root, so a private $TMPDIR (a `mktemp -d`, mode 0700) would refuse it
/// every directory below: kforge's environment failing, never the candidate.
std::string host_temp_dir();

struct CandidateSession {
  std::string artifact;
  kforge::backends::HostKind host_kind = kforge::backends::HostKind::native;  ///< the host running it
  ScratchDir scratch;  ///< the Triton host's cache on a GPU; outlives the host (declared first)
  ScratchDir workdir;  ///< the host's working directory: empty, read-only; outlives the host
  std::unique_ptr<Exchange> ex;
  std::unique_ptr<CandidateHost> host;
  /// A timed window around a run of no sets (calibration.cpp timed_window), measured before the
  /// candidate was loaded (ms): what every timed batch without a lead-in subtracts.
  double round_trip_ms = 0;
  /// On a GPU: the timed batches' lead-in and the same window behind it (ms, measured before
  /// the candidate was loaded); null when there is none (CPU, CUDA refused, or it was
  /// preempted too often: the batches then subtract round_trip_ms).
  std::unique_ptr<LeadIn> lead;
  double lead_in_ms = 0;
  /// The lead-in's length (ns): by host kind (calibration.cpp lead_in_ns), shortened after a
  /// preempted batch.
  uint64_t lead_ns = 0;
  /// On a GPU: the GPU's time from the lead-in's end to the judge's stamp in the same window
  /// around a run of no sets (ms; the median of the calibration's windows that ran alone): what
  /// every timed batch behind a lead-in subtracts.
  double gpu_base_ms = 0;
  /// Diagnostics of the calibration's windows behind a lead-in: their GPU times (ms) and how
  /// long each freeze at the reply waited (us).
  std::vector<double> base_gpu_all_ms, base_freeze_us;
  /// On a GPU: one launch's GPU time in the judge's own context, launches back to back in one
  /// stream behind the lead-in (ms; calibration.cpp launch_floor_ms), measured before the candidate
  /// was loaded; 0 = not measured. No call that writes its outputs on the device takes less.
  double launch_floor_ms = 0;
  at::Tensor trailer;        ///< the judge's own 4 bytes on the device (timed_window's trailer)
  int threads_allowed = -1;  ///< cpu host: threads after load + OpenMP's pool (-1: not checked)
  /// The calibration ran under the device's timed lock (or where there is no usable lock): only
  /// then may a bench reuse this host; else the bench starts and calibrates a fresh one.
  bool calibrated_alone = false;
  int seq = 0;
};

/// The `check` request (runner_protocol.hpp) for req.candidate: the reply's JSON, the fields of
/// protocol::CheckReply (the worker sends it through that type). When it passes, *keep receives
/// the still-running (frozen) session for the bench.
nlohmann::json check_candidate(const JudgeContext& ctx, LoadedTask& task,
                               const kforge::backends::protocol::CheckRequest& req,
                               std::unique_ptr<CandidateSession>* keep);

/// The `testblock` request (a TritonBench task, runner_protocol.hpp): the task's test block runs
/// here over the reference (req.source, test_source, test_function) under `trials` seeds from
/// req.seed, and in a fresh confined Triton host over the candidate (req.candidate, which must
/// define req.entries); the results are compared leaf by leaf: tensors with the
/// tolerances through the output arena, the others as values. Replies like `check`. The
/// reference runs twice per seed, its uninitialised memory poisoned differently each time
/// (testblock.py gold_agreement): a tensor result is compared only on the elements where the two
/// runs agree, and a gold whose runs disagree on half a result or more, or on a result that is
/// not a tensor, is unjudgeable (an ErrorReply of JudgeError::unjudgeable; one that raises:
/// reference_failed). A gold that agreed with itself on every element is run once per seed in
/// this worker's later checks of the task.
nlohmann::json check_testblock(const JudgeContext& ctx,
                               const kforge::backends::protocol::TestblockRequest& req);

/// The `prewarm` request (runner_protocol.hpp): starts what a candidate host of `kind` needs
/// before its first check, without waiting for it: the Triton zygote (zygote.hpp) where the
/// runner has zygotes; nothing for kforge-host.
kforge::backends::protocol::PrewarmReply prewarm_host(const JudgeContext& ctx,
                                                      kforge::backends::HostKind kind);

/// The `bench` request: the candidate (when req.candidate is set; `session` is reused when it
/// is that artifact's) and then, with the candidate's process gone, the reference. The reply's
/// JSON, the fields of protocol::BenchReply (the worker sends it through that type).
nlohmann::json bench_candidate(const JudgeContext& ctx, LoadedTask& task,
                               const kforge::backends::protocol::BenchRequest& req,
                               std::unique_ptr<CandidateSession> session);

}  // namespace kforge::runner
