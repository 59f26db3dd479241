// backends/judge/judge_internal.hpp — what the files of the judge's check and bench share
// (internal to kforge-runner; the entry points are in judge.hpp).
//
// The judge's work on one candidate is split by concern: judge.cpp (the candidate's session:
// its host started, calibrated, loaded and run on sets of the exchange), calibration.cpp (the
// lead-in, the timed window, what every batch subtracts), check.cpp (the check and its
// comparisons), bench.cpp (the candidate's timed batches and the bench reply), bench_figures.cpp
// (the reference's timing, the reply's statistics and bounds) and testblock*.cpp (a TritonBench
// test block). Each function is documented where it is defined; this header names them. Nothing
// here owns state beyond its arguments (a Session is owned by its request's caller). Single-
// threaded, as the runner.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "judge.hpp"

namespace kforge::runner {

using json = nlohmann::json;
namespace protocol = kforge::backends::protocol;
using kforge::backends::JudgeError;

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

/// The judge's deadline for one request (inside the client's own, so that a slow candidate is
/// judged a timeout here rather than costing the judge).
struct Deadline {
  Clock::time_point end;
  explicit Deadline(int64_t ms) : end(Clock::now() + Ms(ms)) {}
  Ms left() const { return std::max(Ms(1), std::chrono::duration_cast<Ms>(end - Clock::now())); }
};

using Session = CandidateSession;

/// Wall time per named phase of one request (ms), reported in the reply as "phases": each
/// lap(name) adds the time since the previous lap to that phase.
class Laps {
 public:
  void lap(const char* name) {
    const auto now = Clock::now();
    ms_[name] += std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
  }
  json to_json() const { return json(ms_); }

 private:
  Clock::time_point last_ = Clock::now();
  std::map<std::string, double> ms_;
};

/// Error figures over a check's trials: the maxima over trials and outputs (on passes too).
struct Figures {
  double max_abs = 0, max_rel = 0, max_ratio = 0;
  void add(const Comparison& c) {
    max_abs = std::max(max_abs, c.max_abs);
    max_rel = std::max(max_rel, c.max_rel);
    max_ratio = std::max(max_ratio, c.tolerance_ratio);
  }
};

/// How long to time. Each batch (K calls) is one sample. Stop after the budget (once min_reps
/// calls and 3 batches are in); else go on until kMinBatches batches are in and either `reps`
/// calls or kEnoughMs of timed calls are.
struct BenchPlan {
  static constexpr int kMinBatches = 5;
  static constexpr double kEnoughMs = 60;
  int warmup = 5, reps = 100, min_reps = 10;
  double budget_ms = 5000;
  bool more(int batches, int calls, double timed_ms, Clock::time_point t0) const {
    if (calls >= min_reps && batches >= 3 && ms_since(t0) > budget_ms) return false;
    return batches < kMinBatches || (calls < reps && timed_ms < kEnoughMs);
  }
};

/// One timed window's readings (timed_window).
struct Window {
  double ms = 0;
  bool led = false;  ///< the lead-in ran before the request
  /// With a lead-in: the GPU's time from the lead-in's end to the judge's stamp after the
  /// reply (lead_in.hpp); negative when it could not be read.
  double gpu_ms = -1;
  double freeze_us = 0;  ///< how long the freeze at the reply waited (diagnostics)
};

/// A gap between two of the lead-in's timer readings above this: it was preempted (another
/// context ran meanwhile), and the batch it led is not used. Honest spins that ran alone show
/// gaps of 0.06-0.1 us, and a switch to another context and back costs more than 100 us (the
/// other context's work started 138-147 us after the spin's end, H200: the [.gpu] case "kernels
/// of two CUDA contexts never run at once"), so 10 us leaves a wide margin on both sides.
constexpr uint64_t kPreemptedGapNs = 10'000;

/// What the judge assumes a CPU's caches can hold (it knows the GPU's L2): the bench's working
/// set on the CPU, and the bytes the speed-of-light bound lets stay in cache.
constexpr int64_t kCpuCacheBytes = int64_t{64} << 20;

// judge.cpp: the candidate's session.

/// A failure reply: {"ok": true, "outcome", "sub_kind", "message"}.
json failure(const std::string& outcome, const std::string& sub_kind, const std::string& message);
json failure(const HostFailure& f);
/// The Triton host's free text on a reply line.
std::string host_text(const std::string& rest);
/// The Triton host's `allow` line for the request's allowed ops (none for kforge-host).
std::vector<std::string> allow_lines(const protocol::Candidate& c);
/// The lines the host gets before `load`: allowed ops, and the model's description.
std::vector<std::string> before_load(LoadedTask& task, const protocol::Candidate& c);
/// A cpu candidate's threads beyond its host's own and OpenMP's pool: forbidden_api/threads.
std::optional<json> check_threads(const JudgeContext& ctx, Session& s);
/// Starts, calibrates and loads the candidate's host; a reply when the candidate failed to load.
std::optional<json> open_session(const JudgeContext& ctx, const protocol::Candidate& c, Session& s,
                                 const Deadline& dl, Laps& laps, const std::vector<std::string>& before_load);
/// The Triton host's `err <kind> <text>` after it ran the candidate: the outcome the kind means.
json host_error(const std::string& kind, const std::string& text, const std::string& where);
/// Calls the candidate on the given sets, back to back; nullopt when every call succeeded.
std::optional<json> run_sets(Session& s, const std::vector<int>& sets, const Deadline& dl,
                             json* reported = nullptr);

// calibration.cpp: the lead-in and the timed window.

/// The lead-in's length for a host kind (ns).
uint64_t lead_in_ns(kforge::backends::HostKind host);
/// After a preempted batch: the next lead-in a fifth shorter, not below the native host's.
uint64_t shortened(uint64_t ns);
/// The judge's lead-in on a GPU; null on the CPU or where CUDA refuses it.
std::unique_ptr<LeadIn> make_lead_in(const JudgeContext& ctx);
/// The lead-in's last spin ran alone (call after a device synchronisation).
bool ran_alone(LeadIn& lead);
/// One timed window, the same in calibration (no sets: the fixed work of a run) and in a timed
/// batch. The clock starts before the frozen host is resumed and stops after the judge's
/// trailer, the host being frozen the moment its reply is read: everything the candidate's
/// process does between two freezes (work deferred from an earlier call included), and GPU work
/// it left running behind its reply, is inside the clock. On a GPU the host's context is
/// touched first (a 4-byte memset, waited for) and, with `use_lead`, the judge's lead-in is
/// launched before the request (the candidate's launches queue behind it).
std::optional<json> timed_window(const JudgeContext& ctx, Session& s, const std::vector<int>& sets,
                                 const Deadline& dl, bool use_lead, Window* w, json* reported);
/// What the bench subtracts from every timed batch, measured before the candidate is loaded.
void calibrate(const JudgeContext& ctx, Session& s, const Deadline& dl);
/// A lead-in of `ns` alone: the median wall time and the least GPU time (ms); nullopt when none
/// ran alone.
std::optional<std::pair<double, double>> lead_in_alone(const JudgeContext& ctx, LeadIn& lead, uint64_t ns);

// check.cpp: the check and its comparisons.

/// Per input and parameter, whether it lives in host memory.
std::vector<bool> host_resident(const std::vector<HeldTensor>& inputs, const std::vector<HeldTensor>& params);
Tolerances tolerances_of(const protocol::Tolerances& given);
void copy_inputs(Exchange& ex, int k, const std::vector<HeldTensor>& inputs);
void copy_params(Exchange& ex, const LoadedTask& task, std::size_t n_inputs);
/// After calls (host frozen): canaries, then set 0's inputs (when given) and the parameters bit
/// for bit.
std::optional<json> check_untouched(const Exchange& ex, const LoadedTask& task,
                                    const std::vector<HeldTensor>* inputs, const std::string& when = "");
/// An output_mismatch reply with the comparison's figures.
json mismatch_reply(const Comparison& cmp, const std::string& sub_kind, const std::string& where);
/// The fraction of output `j`'s elements the reference determines.
double determined_fraction(const LoadedTask& task, std::size_t j);
/// Compares output `j` with the reference's (on the elements the reference determines).
Comparison compare_output(const LoadedTask& task, std::size_t j, const at::Tensor& actual,
                          const at::Tensor& expected, const Tolerances& tol);

// bench.cpp: the sets and the candidate's timed batches.

/// How many of a batch's K sets one timed window runs: all of them for kforge-host; for the
/// Triton host kMinGpuSets, whose calls' host-side work (up to about 100 us each) fits in its
/// lead-in, so that a batch of 64 small calls is timed on the GPU, not on the host's CPU (with
/// one window, 64 calls of a 1024x16 softmax read 75 us a call against the reference's 2.2 us,
/// H200). The reference's batches go in chunks of the same size.
std::size_t chunk_sets(kforge::backends::HostKind host, int K);
/// How many input/output sets the bench rotates through (bench.cpp).
int choose_sets(const JudgeContext& ctx, const LoadedTask& task);

// bench_figures.cpp: the reference's timing and the reply's figures.

/// The speed-up's percentile-bootstrap 95% interval (median reference / median candidate).
std::pair<double, double> bootstrap_speedup_ci(const std::vector<double>& ref,
                                               const std::vector<double>& cand);
json stats_json(const Stats& s, int sets);
std::vector<double> time_reference(const JudgeContext& ctx, LoadedTask& task, int K, const BenchPlan& plan,
                                   bool compiled, uint64_t lead_ns, std::size_t chunk);
void apply_speed_of_light(const JudgeContext& ctx, const LoadedTask& task, int K, json& j);
void apply_launch_floor(double floor_ms, json& j);

}  // namespace kforge::runner
