// The bench's calibration (judge_internal.hpp): the lead-in that keeps the GPU busy while a
// batch's launches queue behind it, the timed window every batch and the calibration share,
// the window around a run of no sets that every batch subtracts, and the launch floor.
#include <algorithm>
#include <functional>

#include "judge_internal.hpp"

namespace kforge::runner {

/// How long a timed batch's lead-in keeps the GPU busy (lead_in.hpp) for a native candidate
/// host: above the cold first call of a kf_forward with room for the request's way to the host;
/// short, because a native candidate's own CPU work before its launches is hidden in it.
constexpr uint64_t kLeadInNs = 600'000;
/// The same for the Triton host (issue 22 §4): long enough that the K calls of a batch have
/// been launched, through Python, Triton's launcher and the host's per-call harness (its
/// dispatch mode, the outputs' stores: about 50-80 us a call), before the GPU is free, so the
/// batch is timed on the GPU as do_bench times a call, not by the host's CPU; and below the
/// GPU's time slice (a spin of the judge's ran 2.1 ms before another context with work queued
/// preempted it, H100), so that the candidate's queued work does not preempt it. The Triton
/// host's candidate cannot compute on the host (ast_scan.py, the recorder of PyTorch compute),
/// which is what a lead-in hides. Shortened by a fifth after each batch whose lead-in was
/// preempted, down to kLeadInNs.
constexpr uint64_t kLeadInPythonNs = 1'800'000;

uint64_t lead_in_ns(kforge::backends::HostKind host) {
  return host == kforge::backends::HostKind::python ? kLeadInPythonNs : kLeadInNs;
}

/// After a preempted batch: the next lead-in a fifth shorter, not below kLeadInNs.
uint64_t shortened(uint64_t ns) {
  return std::max<uint64_t>(kLeadInNs, ns - ns / 5);
}

std::unique_ptr<LeadIn> make_lead_in(const JudgeContext& ctx) {
#ifdef KFORGE_RUNNER_CUDA
  std::string err;
  if (ctx.device.is_cuda()) return cuda_lead_in(static_cast<int>(ctx.device.index()), &err);
#else
  (void)ctx;
#endif
  return nullptr;
}

/// The lead-in's last spin ran alone (call after a device synchronisation).
bool ran_alone(LeadIn& lead) {
  return lead.max_gap_ns() <= kPreemptedGapNs;
}

namespace {

/// The conditions of a timed batch before its clock starts: the host frozen while the judge
/// works on the device (poisoning every set). The host stays frozen.
void bench_conditions(const JudgeContext& ctx, Session& s) {
  s.host->freeze();
  for (int k = 0; k < s.ex->sets(); ++k) s.ex->poison(k);
  sync_device(ctx.device);
}

/// The judge's trailer: a device operation of its own, waited for, right after the candidate's
/// reply. Contexts share the GPU by time-slicing, so GPU work the candidate left queued behind
/// its reply delays it, inside the clock.
void trailer(const JudgeContext& ctx, Session& s) {
  if (!ctx.device.is_cuda()) return;
  if (!s.trailer.defined()) s.trailer = at::zeros({1}, at::TensorOptions().device(ctx.device));
  s.trailer.zero_();
  sync_device(ctx.device);
}

}  // namespace

std::optional<json> timed_window(const JudgeContext& ctx, Session& s, const std::vector<int>& sets,
                                 const Deadline& dl, bool use_lead, Window* w, json* reported) {
  HostFailure f;
  const auto t0 = Clock::now();
  s.host->resume();
  if (ctx.device.is_cuda() && !s.host->request("touch", dl.left(), &f, "touched")) return failure(f);
  w->led = use_lead && s.lead && s.lead->launch(s.lead_ns).empty();
  auto failed = run_sets(s, sets, dl, reported);
  w->freeze_us = s.host->last_freeze_us();
  if (w->led && s.lead->stamp().empty()) {  // the trailer, on the GPU's clock
    sync_device(ctx.device);
    w->gpu_ms = s.lead->interval_ms();
  } else {
    trailer(ctx, s);
  }
  w->ms = ms_since(t0);
  return failed;
}

namespace {

/// Five lead-ins of `ns`, each followed by work() and the stamp and waited for: of those that
/// ran alone, the GPU's time from the lead-in's end to the stamp into *gpu and the wall time
/// from the launch's return to the wait's end into *wall (ms; wall may be null). False at the
/// first CUDA error, with what was measured before it.
bool led_runs(const JudgeContext& ctx, LeadIn& lead, uint64_t ns, const std::function<void()>& work,
              std::vector<double>* gpu, std::vector<double>* wall) {
  for (int i = 0; i < 5; ++i) {
    sync_device(ctx.device);
    if (!lead.launch(ns).empty()) return false;
    const auto t0 = Clock::now();
    work();
    if (!lead.stamp().empty()) return false;
    sync_device(ctx.device);
    if (ran_alone(lead) && lead.interval_ms() >= 0) {
      gpu->push_back(lead.interval_ms());
      if (wall) wall->push_back(ms_since(t0));
    }
  }
  return true;
}

/// One kernel launch's GPU time (ms) in the judge's own context: kFloorLaunches fills of its 4
/// bytes queued back to back behind a lead-in, from the lead-in's end to the stamp on the GPU's
/// clock, divided by the launches and the stamp; the least of 5 runs that ran alone (another
/// context's work between the fills only lengthens a run: with three other runners checking
/// candidates on an H200, a median once read 10.1 us against 1.5-1.6 us), 0 when none did.
/// What the launch floor of apply_launch_floor compares with.
double launch_floor_ms(const JudgeContext& ctx, Session& s) {
  constexpr int kFloorLaunches = 32;
  if (!s.trailer.defined()) s.trailer = at::zeros({1}, at::TensorOptions().device(ctx.device));
  const auto fills = [&] {
    for (int i = 0; i < kFloorLaunches; ++i) s.trailer.zero_();
  };
  std::vector<double> gpu;
  led_runs(ctx, *s.lead, kLeadInNs, fills, &gpu, nullptr);  // an error keeps what was measured
  return gpu.empty() ? 0 : *std::min_element(gpu.begin(), gpu.end()) / (kFloorLaunches + 1);
}

}  // namespace

/// What the bench subtracts from every timed batch, measured before the candidate is loaded (it
/// cannot inflate it) and under the bench's own conditions: the median of timed windows
/// (timed_window) around a run of no sets, plainly and, on a GPU, behind the lead-in (those
/// whose lead-in ran alone). Measured idle instead, a round trip read 0.06 ms where the bench's
/// own read 0.12-0.14 ms (H100, Triton host), and the difference was charged to every candidate.
void calibrate(const JudgeContext& ctx, Session& s, const Deadline& dl) {
  s.lead = make_lead_in(ctx);
  s.lead_ns = lead_in_ns(s.host_kind);
  std::vector<double> rt, led, gpu, freezes;
  for (int i = 0; i < 9; ++i)
    for (int with_lead = 0; with_lead <= (s.lead ? 1 : 0); ++with_lead) {
      bench_conditions(ctx, s);
      Window w;
      if (auto failed = timed_window(ctx, s, {}, dl, with_lead, &w, nullptr))
        throw std::runtime_error("kforge-host failed its calibration: " +
                                 failed->value("message", std::string()));
      if (!with_lead)
        rt.push_back(w.ms);
      else if (w.led && ran_alone(*s.lead) && w.gpu_ms >= 0) {
        led.push_back(w.ms);
        gpu.push_back(w.gpu_ms);
        freezes.push_back(w.freeze_us);
      }
    }
  s.round_trip_ms = stats_of(rt).median;
  if (led.size() >= 5) {
    s.lead_in_ms = stats_of(led).median;
    // The median, as the batches' times are: a window's fixed part varies from window to window
    // (the freeze at the host's reply alone waited 37-238 us, NVIDIA H200), and the least of
    // nine, taken off every batch, charged each Triton candidate the typical window's excess
    // over the luckiest (gelu +6.5-10.4%, layer_norm +4.6-15.3% against do_bench; the calibration's
    // windows spread 0.36-0.79 ms, stop 35). Other contexts cannot lengthen these windows: every
    // runner's checks hold the device's lock shared, off timed work (timed_lock.hpp). Before
    // that, with the median, G/vector_addition's gold against itself read 5.3 TB/s, above the
    // H200's 4.8; the speed-of-light bound and the launch floor still refuse such readings.
    s.gpu_base_ms = stats_of(gpu).median;
    s.base_gpu_all_ms = gpu;
    s.base_freeze_us = freezes;
    s.launch_floor_ms = launch_floor_ms(ctx, s);
  } else {
    s.lead.reset();
  }
  s.host->resume();
}

/// What a lead-in of `ns` takes in this process, of 5 that ran alone (launched, then stamped and
/// waited for): the median of their wall times and the least of the GPU's times from the
/// lead-in's end to the stamp (ms; the least, as calibrate's gpu_base_ms); nullopt when none ran
/// alone.
std::optional<std::pair<double, double>> lead_in_alone(const JudgeContext& ctx, LeadIn& lead, uint64_t ns) {
  std::vector<double> ms, gpu;
  const auto nothing = [] {};  // the lead-in alone: stamped right after it
  if (!led_runs(ctx, lead, ns, nothing, &gpu, &ms) || ms.empty()) return std::nullopt;
  return std::pair{stats_of(ms).median, *std::min_element(gpu.begin(), gpu.end())};
}

}  // namespace kforge::runner
