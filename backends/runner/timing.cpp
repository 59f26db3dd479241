// Summary statistics for kforge-runner's timings.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runner.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

namespace kforge::runner {

namespace {
void sync_if_cuda(const at::Device& device) {
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();
#else
  (void)device;
#endif
}
}  // namespace

double measure_peak_bandwidth(const at::Device& device) {
  int64_t n = int64_t{256} << 20;
  auto sync = [&] { sync_if_cuda(device); };
#ifdef KFORGE_RUNNER_CUDA
  if (device.is_cuda()) {
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    n = std::min<int64_t>(int64_t{1} << 30, static_cast<int64_t>(free_b / 8));
  }
#endif
  auto a = at::empty({n}, at::TensorOptions().dtype(at::kByte).device(device));
  auto b = at::empty_like(a);
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    sync();
    auto t0 = std::chrono::steady_clock::now();
    a.fill_(i + 1);
    sync();
    const double fill_s = ms_since(t0) * 1e-3;
    t0 = std::chrono::steady_clock::now();
    b.copy_(a);
    sync();
    const double copy_s = ms_since(t0) * 1e-3;
    if (i == 0) continue;  // first touch: page faults, clocks
    best = std::max({best, static_cast<double>(n) / fill_s, 2.0 * static_cast<double>(n) / copy_s});
  }
  return best;
}

double measure_fp32_flops(const at::Device& device) {
  const int64_t n = device.is_cuda() ? 4096 : 1024;
  auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
  auto a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
  const bool tf32 = at::globalContext().allowTF32CuBLAS();
  at::globalContext().setAllowTF32CuBLAS(false);
  double best = 0;
  for (int i = 0; i < 6; ++i) {
    sync_if_cuda(device);
    const auto t0 = std::chrono::steady_clock::now();
    auto c = at::mm(a, b);
    sync_if_cuda(device);
    const double s = ms_since(t0) * 1e-3;
    if (i > 0)
      best =
          std::max(best, 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / s);
  }
  at::globalContext().setAllowTF32CuBLAS(tf32);
  return best;
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
