// [profile] issue 11 §1: roofline fractions, the bottleneck class and its thresholds, the
// bytes-when-no-formula rule, and the per-device peaks cache file.
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "catch.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/common/util.hpp"

using namespace kforge;
namespace fs = std::filesystem;

namespace {
DevicePeaks h100() {
  DevicePeaks p;
  p.device = "NVIDIA H100 80GB HBM3";
  p.dram_bytes_per_s = 3.0e12;
  p.flops_per_s = 50e12;
  return p;
}
bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
}
}  // namespace

TEST_CASE("roofline: memory-, compute-, latency- and launch-bound", "[profile][roofline]") {
  // 1 GiB streamed in 0.5 ms: 2.147 TB/s = 72% of 3 TB/s, FLOPs negligible.
  auto m = roofline(0.5, 1073741824.0, 268435456.0, h100());
  CHECK(m.bottleneck == Bottleneck::memory);
  CHECK(near(m.dram_fraction, 1073741824.0 / 0.5e-3 / 3.0e12));
  CHECK(m.flops_fraction < 0.05);
  CHECK(near(m.intensity, 0.25));
  CHECK(near(m.ridge, 50.0 / 3.0));
  CHECK_THAT(m.reason, Catch::Contains("DRAM at 72% of measured peak (2147 of 3000 GB/s)"));

  // GEMM 4096^3: 137 GFLOP in 4 ms = 34.4 TFLOP/s = 69% of peak; 201 MB moved = 1.7%.
  const double f = 2.0 * 4096 * 4096 * 4096, b = 3.0 * 4096 * 4096 * 4;
  auto c = roofline(4.0, b, f, h100());
  CHECK(c.bottleneck == Bottleneck::compute);
  CHECK(near(c.flops_fraction, f / 4e-3 / 50e12));
  CHECK_THAT(c.reason, Catch::Contains("FP32 at 69% of measured peak (34.36 of 50.0 TFLOP/s)"));

  // 64 MiB in 0.2 ms: 0.34 TB/s = 11%: nothing busy, and 200 us is not launch-bound.
  auto l = roofline(0.2, 67108864.0, 0, h100());
  CHECK(l.bottleneck == Bottleneck::latency);
  CHECK_FALSE(l.launch_bound);
  CHECK_THAT(l.reason, Catch::Contains("no resource is busy"));

  // 1 MiB in 8 us: launch-bound.
  auto s = roofline(0.008, 1048576.0, 0, h100());
  CHECK(s.bottleneck == Bottleneck::latency);
  CHECK(s.launch_bound);
  CHECK_THAT(s.reason, Catch::Contains("launch-bound"));

  // The thresholds are parameters: at busy_fraction 0.05 the same call is memory-bound.
  RooflineThresholds t;
  t.busy_fraction = 0.05;
  CHECK(roofline(0.2, 67108864.0, 0, h100(), t).bottleneck == Bottleneck::memory);

  // Beyond the peak is flagged, not credited silently.
  auto x = roofline(0.1, 1e9, 0, h100());
  CHECK(x.exceeds_peak);
  CHECK_THAT(x.reason, Catch::Contains("suspect"));

  // Unknowns.
  CHECK(roofline(0, 1e9, 1e9, h100()).bottleneck == Bottleneck::unknown);
  CHECK(roofline(1, 1e9, 1e9, DevicePeaks{}).bottleneck == Bottleneck::unknown);
  CHECK(roofline(1, 0, 0, h100()).bottleneck == Bottleneck::unknown);
  CHECK(to_string(Bottleneck::memory) == "memory-bound");
}

TEST_CASE("io_bytes: inputs read once and outputs written once", "[profile][roofline]") {
  CHECK(io_bytes({{{64, 257}, "float32"}, {{257}, "float16"}}, {{{64, 257}, "float32"}}) ==
        64 * 257 * 4 + 257 * 2 + 64 * 257 * 4);
  CHECK(io_bytes({{{}, "int64"}}, {}) == 8);  // rank 0: one element
  CHECK(dtype_size("bfloat16") == 2);
  CHECK(dtype_size("bool") == 1);
}

TEST_CASE("device peaks cache: save, load by device name, malformed files", "[profile][roofline]") {
  const fs::path dir = fs::temp_directory_path() / ("kforge-peaks-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path file = dir / "device_peaks.json";
  CHECK(load_peaks_file(file).empty());
  CHECK_FALSE(load_peaks(file, "x"));
  auto p = h100();
  p.measured_at = "2026-01-01T00:00:00.000Z";
  p.method = "copy 2 GiB best of 20; sgemm 8192^3 best of 10";
  save_peaks(file, p);
  DevicePeaks q;
  q.device = "NVIDIA H200";
  q.dram_bytes_per_s = 4.3e12;
  save_peaks(file, q);
  auto all = load_peaks_file(file);
  REQUIRE(all.size() == 2);
  auto got = load_peaks(file, "NVIDIA H100 80GB HBM3");
  REQUIRE(got);
  CHECK(got->dram_bytes_per_s == 3.0e12);
  CHECK(got->flops_per_s == 50e12);
  CHECK(got->method == p.method);
  CHECK(load_peaks(file, "NVIDIA H200")->flops_per_s == 0);

  write_file(file, R"({"schema": 1, "devices": {"A": {"dram_bytes_per_s": "fast"}}})");
  CHECK_THROWS_WITH(load_peaks_file(file), Catch::Contains("devices.A.dram_bytes_per_s"));
  CHECK_FALSE(load_peaks(file, "A"));  // malformed reads as absent
  write_file(file, R"({"schema": 2})");
  CHECK_THROWS_WITH(load_peaks_file(file), Catch::Contains("schema"));
  fs::remove_all(dir);

  setenv("KFORGE_PEAKS_FILE", "/x/peaks.json", 1);
  CHECK(default_peaks_file() == fs::path("/x/peaks.json"));
  unsetenv("KFORGE_PEAKS_FILE");
}
