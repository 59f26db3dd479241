// Summary statistics for kforge-runner's timings.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

namespace kforge::runner {

void sync_device(const at::Device& device) {
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}

namespace {
/// `units` per second of `work`, the best of five timed calls after an untimed first one (page
/// faults, clocks), each waited for on the device.
template <class Work>
double best_rate(const at::Device& device, double units, Work&& work) {
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    sync_device(device);
    const auto t0 = std::chrono::steady_clock::now();
    work(i);
    sync_device(device);
    if (i > 0) best = std::max(best, units / (ms_since(t0) * 1e-3));
  }
  return best;
}

constexpr int64_t kHostBandwidthBytes = int64_t{256} << 20;
constexpr int64_t kDeviceBandwidthBytes = int64_t{1} << 30;
int64_t matmul_dim(const at::Device& device) {
  return device.is_cuda() ? 4096 : 1024;
}
}  // namespace

Measured measure_peak_bandwidth(const at::Device& device) {
  int64_t n = kHostBandwidthBytes;
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) {
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    n = std::min<int64_t>(kDeviceBandwidthBytes, static_cast<int64_t>(free_b / 8));
  }
#endif
  Measured m;
  {
    auto a = at::empty({n}, at::TensorOptions().dtype(at::kByte).device(device));
    auto b = at::empty_like(a);
    const auto bytes = static_cast<double>(n);
    const double fill = best_rate(device, bytes, [&](int i) { a.fill_(i + 1); });
    const double copy = best_rate(device, 2 * bytes, [&](int) { b.copy_(a); });  // read + write
    m.per_s = std::max(fill, copy);
  }
  m.method = std::string(kPeaksMethodVersion) + ": DRAM: best of 5 fills and copies of " +
             std::to_string(n >> 20) + " MiB" +
             (device.is_cuda() ? " (less where free memory is short)" : "");
  if (!device.is_cuda()) {
    const Measured threaded = measure_cpu_bandwidth_peak(n);
    m.per_s = std::max(m.per_s, threaded.per_s);
    m.method += ", and " + threaded.method;
  }
  return m;
}

Measured measure_fp32_flops(const at::Device& device) {
  const int64_t n = matmul_dim(device);
  Measured m;
  {
    auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
    auto a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
    const bool tf32 = at::globalContext().allowTF32CuBLAS();
    at::globalContext().setAllowTF32CuBLAS(false);
    const auto dim = static_cast<double>(n);
    m.per_s = best_rate(device, 2 * dim * dim * dim, [&](int) { at::mm(a, b); });
    at::globalContext().setAllowTF32CuBLAS(tf32);
  }
  m.method = "FP32: best of 5 at::mm of " + std::to_string(n) + "^2, TF32 off";
  if (!device.is_cuda()) {
    const Measured fma = measure_cpu_fma_peak();
    m.method += " (" + std::to_string(m.per_s / 1e12).substr(0, 5) + " TFLOP/s), and " + fma.method + " (" +
                std::to_string(fma.per_s / 1e12).substr(0, 5) + " TFLOP/s); the larger";
    m.per_s = std::max(m.per_s, fma.per_s);
  }
  m.method += "; measured by kforge-runner";
  return m;
}

Stats stats_of(std::vector<double> ms) {
  Stats s;
  s.reps = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {  // linear interpolation between closest ranks
    double r = p * static_cast<double>(ms.size() - 1);
    auto lo = static_cast<std::size_t>(std::floor(r));
    auto hi = std::min(lo + 1, ms.size() - 1);
    return ms[lo] + (ms[hi] - ms[lo]) * (r - static_cast<double>(lo));
  };
  s.median = pct(0.5);
  s.p10 = pct(0.1);
  s.p90 = pct(0.9);
  s.min = ms.front();
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  double var = 0;
  for (double v : ms) var += (v - s.mean) * (v - s.mean);
  var /= static_cast<double>(ms.size());
  s.cv = s.mean > 0 ? std::sqrt(var) / s.mean : 0;
  return s;
}

}  // namespace kforge::runner
