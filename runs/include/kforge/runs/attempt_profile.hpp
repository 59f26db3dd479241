#pragma once
// kforge/runs/attempt_profile.hpp — the profile part of an attempt record (issue 11 §1), kept
// under the key "profile" of an attempts.jsonl row: compile-time resources (cuda), the
// profiler that ran and its time, the roofline reading and the telling metrics. A field at its
// default was not measured; an old record without "profile" reads as all defaults.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/common/profile.hpp"

namespace kforge {

struct AttemptProfile {
  std::vector<KernelResources> resources;  ///< per kernel of the artifact (cuda)
  std::string resources_note;              ///< why resources are missing or partial
  double resources_ms = 0;                 ///< cuobjdump wall time

  std::string profiler;       ///< the profiler that ran: "none", "basic", "ncu"
  double profiler_ms = 0;     ///< wall time of the profiled run (separate from the timed one)
  std::string profiler_note;  ///< e.g. "ncu not found; basic profile only" (never a failure)

  double t_reference_p10_ms = 0;  ///< the reference's p10/p90 (the candidate's are in the record)
  double t_reference_p90_ms = 0;

  std::string peaks_device;       ///< the device whose measured peaks were used
  double peak_gbps = 0;           ///< its measured DRAM bandwidth, GB/s (0 = no peaks)
  double peak_tflops = 0;         ///< its measured FP32 rate, TFLOP/s
  double dram_fraction = 0;       ///< achieved bytes/s over measured DRAM peak, 0..1+ (0 = unknown)
  double flops_fraction = 0;      ///< achieved FLOP/s over measured FP32 peak
  std::string bottleneck;         ///< "memory-bound", "compute-bound", "latency-bound", "" unknown
  std::string bottleneck_reason;  ///< the roofline's one line

  std::vector<MetricFinding> findings;        ///< the 3-4 most telling metrics, best first
  std::vector<KernelTime> candidate_kernels;  ///< per kernel launched by one candidate call
  std::vector<KernelTime> reference_kernels;  ///< per kernel launched by one reference call

  bool empty() const;
};

nlohmann::json to_json(const AttemptProfile& p);
/// Throws RecordError (attempt.hpp) naming `line` and the field on a wrong type.
AttemptProfile profile_from_json(const nlohmann::json& j, std::size_t line = 0);

}  // namespace kforge
