// The lead-in of a timed batch on a GPU: a kernel of the judge's own that keeps the device busy
// for a fixed time while the judge's request reaches the candidate's host and the candidate's
// first call gets to its first launch. Without it, a batch's wall time counts that first call's
// CPU latency (0.28-0.33 ms for a Triton kf_forward on a host that has been asleep, H100), which
// triton.testing.do_bench, timing with CUDA events, never sees. With it, the candidate's launches
// queue behind the lead-in, and the judge subtracts the lead-in as calibrated before the
// candidate was loaded.
//
// The batch is timed on the GPU's own clock (%globaltimer), from the lead-in's last reading to
// that of a stamp kernel the judge queues after the candidate's reply (issue 22 §4): the GPU time
// between two kernels of the judge's, as triton.testing.do_bench and KernelBench time a call
// with CUDA events, without the CPU latency of the judge's own wake-up and synchronisation.
//
// Honest by construction: the lead-in runs in the judge's CUDA context, which the candidate's
// process cannot reach; the judge sends the candidate its request only once the spin is running
// (launch() waits for its flag: before, with other runners' contexts busy on the same GPU, the
// candidate's kernels could be scheduled before the spin began); without MPS, kernels of two
// contexts never run at once, so nothing of the candidate's GPU work overlaps the spin unless the
// GPU's time-slicing preempts it, which the spinning thread sees as a gap in the global timer
// (the batch is then not used). Declared without CUDA
// types (judge.hpp includes it); built only where kforge-runner has CUDA. One owner, one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace kforge::runner {

class LeadIn {
 public:
  virtual ~LeadIn() = default;
  /// Queues the spin on the judge's legacy default stream: one thread reads %globaltimer until
  /// `ns` nanoseconds have passed; returns once the spin runs (it sets a flag in mapped host
  /// memory first), so that a candidate's work queued after it cannot run before it starts, only
  /// in a gap that max_gap_ns() shows. Returns "" or why not (the CUDA error's name; the spin
  /// not started within 200 ms: the caller then times the window without it).
  virtual std::string launch(uint64_t ns) = 0;
  /// After the device was synchronised: the largest gap (ns) between two consecutive timer
  /// readings of the last spin. Normally the timer's tick (about 1 us or less); a gap of tens
  /// of microseconds or more means another context ran in between (time-slicing).
  virtual uint64_t max_gap_ns() = 0;
  /// Queues the stamp on the same stream (behind the spin and whatever the judge queued
  /// since): one thread reads %globaltimer once. Returns "" or the CUDA error's name.
  virtual std::string stamp() = 0;
  /// After the device was synchronised: the GPU time (ms) from the last spin's last timer
  /// reading to the last stamp's; a negative value when there was no stamp since the spin.
  virtual double interval_ms() = 0;
};

/// A lead-in on CUDA device `device` (its few bytes of device memory allocated now); nullptr
/// with *err set when CUDA refuses.
std::unique_ptr<LeadIn> cuda_lead_in(int device, std::string* err);

}  // namespace kforge::runner
