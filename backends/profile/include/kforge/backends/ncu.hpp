#pragma once
// kforge/backends/ncu.hpp — the Nsight Compute profile step (issue 11 §1): the curated metric
// set (backends/profile/ncu_metrics.json, each metric with the reason it is there), the `ncu`
// argv, the parser of ncu's CSV output into a typed ProfileReport (per kernel launched: name,
// time, metric values), and the findings: the 3-4 most telling metrics with a one-line reading.
// Everything here is pure except find_ncu() and load_ncu_metrics() (file reads). Running ncu
// against the candidate host is profile_step.hpp's job.
//
// --profiler none|basic|ncu: none = no profile step; basic = timing, roofline and compile-time
// resources; ncu = basic plus one Nsight Compute run of the candidate and of the reference.
// The default ("auto") is ncu where ncu is found, else basic; an ncu failure (absent, counters
// not permitted) is a note in the record and the prompt, never an attempt failure.
// profile_step.hpp runs it.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/common/profile.hpp"

namespace kforge::backends {

struct NcuMetric {
  std::string name;   ///< "dram__throughput.avg.pct_of_peak_sustained_elapsed"
  std::string label;  ///< "DRAM throughput"
  std::string group;  ///< time, sol, occupancy, memory, stall, instructions
  std::string unit;   ///< base unit: "%", "ns", "bytes", ...
  std::string reason;
};

/// <kforge_home>/backends/profile/ncu_metrics.json
std::filesystem::path default_ncu_metrics_file();

/// The curated set; throws std::runtime_error naming the file and entry when malformed.
std::vector<NcuMetric> load_ncu_metrics(const std::filesystem::path& file = default_ncu_metrics_file());

/// The reference's share of a metric set: its time metric (group "time") and the launch__*
/// values, which ncu reads without a replay pass. The record keeps only the reference's kernels'
/// names, times and launches (kernel_times); the findings are the candidate's. One pass per
/// kernel instead of the set's several (issue 41 §4, on an H200: a reference of 18 kernels 11.2 s
/// under ncu with the whole set, 5.0 s with the time metric alone; 3.9 s with no kernel profiled).
std::vector<NcuMetric> reference_metrics(const std::vector<NcuMetric>& metrics);

struct NcuOptions {
  std::filesystem::path ncu = "ncu";
  std::string kernel_filter;         ///< -k regex:<filter> when not empty
  int launch_count = 0;              ///< -c N when > 0 (profile the first N kernels)
  std::filesystem::path report_csv;  ///< --log-file PATH when not empty (else stdout)
  /// false: --profile-from-start off, only kernels between cudaProfilerStart/Stop are profiled
  /// (the profile step's targets bracket their one profiled call so).
  bool profile_from_start = true;
  /// --replay-mode when not empty: "kernel" (ncu's default: device memory the kernel may write
  /// is saved before the first pass and restored before each other one) or "application" (the
  /// whole target runs once per pass; nothing is saved; the target must repeat its launches).
  std::string replay_mode;
  /// --cache-control when not empty: "all" (ncu's default: caches flushed before each pass, so
  /// every pass and every launch starts cold, as the judge's timed calls do) or "none".
  std::string cache_control;
};

/// The cheapest replay mode that still reads a call right (ncu's replay modes, above). Kernel
/// replay saves what a launch may write once and restores it on the device before each pass
/// (a device-to-device copy, where the device has room for it); application replay starts the
/// target again for every pass, and the profile targets' start costs more than that copy: both
/// hosts read the whole tensor file, and the Triton host (or the PyTorch reference) imports torch
/// and Triton first. So "kernel", unless ncu's saved copy would not fit: "application" only when
/// the call is idempotent (it leaves its inputs intact and overwrites every output element:
/// what the judge verified of a passing candidate), its target starts cheaply (kforge-host, not
/// a Python process), and the call's device memory (`device_bytes`: inputs, parameters and
/// outputs) is more than half the device's memory (`device_memory`, 0 when unknown: "kernel"),
/// so that kernel replay would save and restore through host memory on every pass.
/// KFORGE_NCU_REPLAY=kernel|application overrides the choice.
std::string choose_replay_mode(bool idempotent, bool cheap_restart, double device_bytes,
                               double device_memory);

/// `ncu --csv --page raw --print-units base --metrics m1,m2,... --target-processes all
///  [--profile-from-start off] [--replay-mode M] [--cache-control C] [-k regex:F] [-c N]
///  [--log-file F] <target argv...>`
std::vector<std::string> ncu_argv(const std::vector<NcuMetric>& metrics,
                                  const std::vector<std::string>& target, const NcuOptions& opt = {});

/// One kernel launch as ncu reports it.
struct KernelProfile {
  int id = 0;
  std::string name;  ///< "Kernel Name" column as printed (demangled by default)
  std::string block, grid;
  double time_ms = 0;                     ///< gpu__time_duration.sum
  std::map<std::string, double> metrics;  ///< metric name -> value in base units
  std::map<std::string, std::string> units;
  bool has(const std::string& m) const { return metrics.count(m) > 0; }
  double get(const std::string& m, double dflt = 0) const;
};

struct ProfileReport {
  std::vector<KernelProfile> kernels;  ///< in launch order
  std::vector<std::string> notes;      ///< ==PROF==/==ERROR==/==WARNING== lines worth keeping
  double total_ms() const;
  bool empty() const { return kernels.empty(); }
};

/// Parses ncu's CSV: the wide `--page raw` layout (one row per kernel, a units row after the
/// header) or the long `--page details` layout (one row per metric: "Metric Name", "Metric
/// Unit", "Metric Value"). Lines that are not CSV (==PROF== ...) are skipped or kept as notes.
/// Numbers may carry thousands separators ("1,234.5"). Scaled units (usecond, Kbyte, ...) are
/// converted to base units (ns, bytes).
ProfileReport parse_ncu_csv(std::string_view text);

/// Launches grouped by kernel name, time summed, in order of first launch.
std::vector<KernelTime> kernel_times(const ProfileReport& r);

/// The 3-4 most telling findings of a report, most telling first: uncoalesced global access
/// (sectors/request), local-memory (spill) traffic, shared bank conflicts, low occupancy and
/// its limiter, launch overhead (many short kernels), DRAM or SM speed of light, the top warp
/// stall reasons, branch divergence. Metrics of the kernels are time-weighted.
std::vector<MetricFinding> ncu_findings(const ProfileReport& r, std::size_t max = 4);

/// ncu on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or KFORGE_NCU.
std::optional<std::filesystem::path> find_ncu();

/// "none", "basic" or "ncu" for a requested mode ("auto", "" = ncu when available, else basic).
/// std::nullopt for an unknown name.
std::optional<std::string> resolve_profiler(const std::string& requested, bool ncu_available);

}  // namespace kforge::backends
