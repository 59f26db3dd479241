#pragma once
// kforge/benchmarks/roofline.hpp — speed of light for a passing attempt (issue 11 §1,
// docs/reports.md): achieved bytes/s and FLOP/s over the device's *measured* peaks, and a
// bottleneck class. Pure functions, plus the per-device cache file of measured peaks.
//
// Bottleneck classes and their thresholds (RooflineThresholds):
//   latency-bound  neither fraction of peak reaches `busy_fraction` (30 %): no resource is
//                  near saturation, so the time goes to waiting — launch overhead, too few
//                  threads in flight (occupancy), dependent memory accesses, synchronisation.
//                  Sub-reason "launch-bound" when the call takes less than `launch_us` (20 µs,
//                  a handful of ~3-5 µs kernel launches): fuse kernels, launch fewer.
//                  Why 30 %: a well-written streaming kernel reaches 70-90 % of copy bandwidth
//                  and a tiled GEMM 50-80 % of matmul FLOP/s; under 30 % of both, optimising
//                  either resource's use cannot be the first thing to fix.
//   memory-bound   otherwise, when the DRAM fraction is the larger one: bytes moved limit it
//                  (the roofline's sloped part); fewer bytes or better coalescing help.
//   compute-bound  otherwise, when the FLOP fraction is the larger one (flat part): fewer or
//                  cheaper instructions, tensor cores where the task allows them.
//   unknown        no time, no peaks, or neither bytes nor FLOPs known.
// A fraction above `exceeds_fraction` (1.05) is flagged: the formula or the timing is suspect
// (docs/judge.md: speedups beyond the measured roofline are not credited).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// A device's measured peaks: what the runner measures once per device (the `peaks` request:
/// fills and copies for DRAM bandwidth, an FP32 matmul for FLOP/s) and `kforge run` caches by
/// device name.
struct DevicePeaks {
  std::string device;           ///< the name the device reports: "NVIDIA H100 80GB HBM3", a CPU model
  double dram_bytes_per_s = 0;  ///< best of fills (bytes written / time) and copies ((read + write) / time)
  double flops_per_s = 0;       ///< FP32 (no TF32), 2*M*N*K / time
  std::string measured_at;      ///< ISO-8601 UTC
  std::string method;           ///< free text: sizes, repetitions, library
};

enum class Bottleneck { unknown, memory, compute, latency };
std::string_view to_string(Bottleneck b);  ///< "unknown", "memory-bound", "compute-bound", "latency-bound"

struct RooflineThresholds {
  double busy_fraction = 0.30;
  double launch_us = 20.0;
  double exceeds_fraction = 1.05;
};

struct Roofline {
  double time_ms = 0;
  double bytes = 0, flops = 0;
  double achieved_bytes_per_s = 0, achieved_flops_per_s = 0;
  double dram_fraction = 0;   ///< of peaks.dram_bytes_per_s (0 when unknown)
  double flops_fraction = 0;  ///< of peaks.flops_per_s (0 when unknown)
  double intensity = 0;       ///< FLOP per byte (0 when bytes unknown)
  double ridge = 0;           ///< peaks.flops_per_s / peaks.dram_bytes_per_s
  Bottleneck bottleneck = Bottleneck::unknown;
  bool launch_bound = false;  ///< latency-bound and the call is shorter than launch_us
  bool exceeds_peak = false;
  std::string reason;  ///< one line: "DRAM at 82% of measured peak (2440 of 2980 GB/s)"
};

/// The roofline reading of one call taking `time_ms` and moving `bytes`, doing `flops` (0 =
/// unknown) on a device with `peaks`.
Roofline roofline(double time_ms, double bytes, double flops, const DevicePeaks& peaks,
                  const RooflineThresholds& t = {});

/// The class from two fractions of peak alone (the rule above without the launch sub-reason):
/// e.g. ncu's DRAM and SM speed-of-light percentages / 100.
Bottleneck classify_fractions(double dram_fraction, double flops_fraction, const RooflineThresholds& t = {});

/// Bytes a call must move at least when the suite gives no formula: every input read once and
/// every output written once. dtype names as the runner reports them ("float32", "int64", ...).
struct TensorBytes {
  std::vector<long long> shape;
  std::string dtype;
};
double io_bytes(const std::vector<TensorBytes>& inputs, const std::vector<TensorBytes>& outputs);
/// Bytes of one element of a dtype name (4 for unknown names).
int dtype_size(const std::string& dtype);

// --- the per-device cache ---------------------------------------------------------------
// device_peaks.json:
//   {"schema": 1,
//    "devices": {"NVIDIA H100 80GB HBM3": {"dram_bytes_per_s": 2.98e12, "flops_per_s": 5.12e13,
//                                           "measured_at": "2026-01-01T00:00:00.000Z",
//                                           "method": "copy 2 GiB best of 20; sgemm 8192^3 best of 10"}}}
// Keys are device names; unknown fields are ignored.

/// $KFORGE_PEAKS_FILE, else $XDG_CACHE_HOME/kforge/device_peaks.json, else
/// ~/.cache/kforge/device_peaks.json.
std::filesystem::path default_peaks_file();

/// Every device of the file; an absent file is an empty map. Throws std::runtime_error naming
/// the file and the field when it is malformed.
std::map<std::string, DevicePeaks> load_peaks_file(const std::filesystem::path& file);

/// The peaks of one device, std::nullopt when the file or the device is absent (a malformed file
/// also reads as absent: the caller measures again).
std::optional<DevicePeaks> load_peaks(const std::filesystem::path& file, const std::string& device);

/// Adds or replaces `peaks` (by device name) in the file, written to a temporary file and renamed.
void save_peaks(const std::filesystem::path& file, const DevicePeaks& peaks);

}  // namespace kforge
