// The CPU's peaks as a kernel reaches them (issue 39 §1): FP32 FMA throughput and memory
// bandwidth over every CPU a candidate may use, one pinned thread per CPU. at::mm and
// at::fill_ reach well below either on many machines (a 1024^2 at::mm measured 0.19 TFLOP/s
// where candidates reached 0.48), and a peak below what a kernel reaches misleads the roofline.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runner.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kforge::runner {

namespace {

using Clock = std::chrono::steady_clock;

/// Iterations of the FMA loop per timed call: ~0.1 s at 3 GHz with 12 chains per thread.
constexpr long kFmaIterations = 20'000'000;

#if defined(__x86_64__)
/// 12 independent chains of 16-wide FMAs: more chains than the FMA latency (4 cycles) times the
/// ports (2), so the units never wait on a result. Returns a value that depends on every chain.
__attribute__((target("avx512f"))) float fma_avx512(long iters, float seed) {
  const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
  __m512 c0 = _mm512_set1_ps(seed), c1 = _mm512_set1_ps(seed + 1), c2 = _mm512_set1_ps(seed + 2),
         c3 = _mm512_set1_ps(seed + 3), c4 = _mm512_set1_ps(seed + 4), c5 = _mm512_set1_ps(seed + 5),
         c6 = _mm512_set1_ps(seed + 6), c7 = _mm512_set1_ps(seed + 7), c8 = _mm512_set1_ps(seed + 8),
         c9 = _mm512_set1_ps(seed + 9), c10 = _mm512_set1_ps(seed + 10), c11 = _mm512_set1_ps(seed + 11);
  for (long i = 0; i < iters; ++i) {
    c0 = _mm512_fmadd_ps(c0, a, b), c1 = _mm512_fmadd_ps(c1, a, b), c2 = _mm512_fmadd_ps(c2, a, b);
    c3 = _mm512_fmadd_ps(c3, a, b), c4 = _mm512_fmadd_ps(c4, a, b), c5 = _mm512_fmadd_ps(c5, a, b);
    c6 = _mm512_fmadd_ps(c6, a, b), c7 = _mm512_fmadd_ps(c7, a, b), c8 = _mm512_fmadd_ps(c8, a, b);
    c9 = _mm512_fmadd_ps(c9, a, b), c10 = _mm512_fmadd_ps(c10, a, b), c11 = _mm512_fmadd_ps(c11, a, b);
  }
  const __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                                               _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7))),
                                 _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  alignas(64) float v[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(v, s);
  float sum = 0;
  for (float x : v) sum += x;
  return sum;
}

/// As fma_avx512 with 8-wide AVX2 FMAs (12 chains of the 16 ymm registers).
__attribute__((target("avx2,fma"))) float fma_avx2(long iters, float seed) {
  const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
  __m256 c0 = _mm256_set1_ps(seed), c1 = _mm256_set1_ps(seed + 1), c2 = _mm256_set1_ps(seed + 2),
         c3 = _mm256_set1_ps(seed + 3), c4 = _mm256_set1_ps(seed + 4), c5 = _mm256_set1_ps(seed + 5),
         c6 = _mm256_set1_ps(seed + 6), c7 = _mm256_set1_ps(seed + 7), c8 = _mm256_set1_ps(seed + 8),
         c9 = _mm256_set1_ps(seed + 9), c10 = _mm256_set1_ps(seed + 10), c11 = _mm256_set1_ps(seed + 11);
  for (long i = 0; i < iters; ++i) {
    c0 = _mm256_fmadd_ps(c0, a, b), c1 = _mm256_fmadd_ps(c1, a, b), c2 = _mm256_fmadd_ps(c2, a, b);
    c3 = _mm256_fmadd_ps(c3, a, b), c4 = _mm256_fmadd_ps(c4, a, b), c5 = _mm256_fmadd_ps(c5, a, b);
    c6 = _mm256_fmadd_ps(c6, a, b), c7 = _mm256_fmadd_ps(c7, a, b), c8 = _mm256_fmadd_ps(c8, a, b);
    c9 = _mm256_fmadd_ps(c9, a, b), c10 = _mm256_fmadd_ps(c10, a, b), c11 = _mm256_fmadd_ps(c11, a, b);
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                                               _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7))),
                                 _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
#endif

/// Portable fallback: 8 chains of 4-wide multiply-adds (the compiler's vectors; 2 FLOP each).
float fma_generic(long iters, float seed) {
  using v4 = float __attribute__((vector_size(16)));
  const v4 a = {0.9999999f, 0.9999999f, 0.9999999f, 0.9999999f}, b = {1e-7f, 1e-7f, 1e-7f, 1e-7f};
  v4 c[8];
  for (int j = 0; j < 8; ++j) c[j] = v4{seed + j, seed + j, seed + j, seed + j};
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < 8; ++j) c[j] = c[j] * a + b;
  float s = 0;
  for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  return s;
}

struct FmaKernel {
  float (*fn)(long, float);
  int width, chains;
  const char* isa;
};

FmaKernel fma_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {fma_avx512, 16, 12, "AVX-512 FMA"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {fma_avx2, 8, 12, "AVX2 FMA"};
#endif
  return {fma_generic, 4, 8, "4-wide multiply-add"};
}

/// The CPUs of this process's affinity mask (those a candidate, which inherits it, may use),
/// at most OMP_NUM_THREADS of them when that is set.
std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  if (const char* e = std::getenv("OMP_NUM_THREADS"); e && std::atoi(e) > 0)
    cpus.resize(std::min(cpus.size(), static_cast<std::size_t>(std::atoi(e))));
  return cpus;
}

/// Runs work(t) on one thread pinned to each of `cpus`, all released together; the wall time
/// (s) from the release to the last one's end.
template <class Work>
double on_every_cpu(const std::vector<int>& cpus, Work&& work) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < cpus.size(); ++t)
    threads.emplace_back([&, t] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[t], &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      ++ready;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      work(t);
    });
  while (ready.load() < static_cast<int>(cpus.size())) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : threads) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

volatile float g_sink = 0;  // keeps the FMA chains' results alive

}  // namespace

Measured measure_cpu_fma_peak() {
  const FmaKernel k = fma_kernel();
  const std::vector<int> cpus = usable_cpus();
  const double flop_per_thread = 2.0 * k.width * k.chains * static_cast<double>(kFmaIterations);
  std::vector<float> out(cpus.size());
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {  // the first warms the clocks up and is not counted
    const double s = on_every_cpu(
        cpus, [&](std::size_t t) { out[t] = k.fn(kFmaIterations, 1.0f + static_cast<float>(t)); });
    if (rep > 0) best = std::max(best, flop_per_thread * static_cast<double>(cpus.size()) / s);
  }
  for (float v : out) g_sink = g_sink + v;
  Measured p;
  p.per_s = best;
  p.method = std::to_string(cpus.size()) + " pinned threads x " + std::to_string(k.chains) + " independent " +
             std::to_string(k.width) + "-wide " + k.isa + " chains, " +
             std::to_string(kFmaIterations / 1'000'000) + "M iterations, best of 3";
  return p;
}

Measured measure_cpu_bandwidth_peak(int64_t bytes) {
  const std::vector<int> cpus = usable_cpus();
  const auto n = static_cast<std::size_t>(bytes);
  std::unique_ptr<char[]> a(new char[n]), b(new char[n]);
  const std::size_t chunk = (n / cpus.size()) & ~std::size_t{63};
  auto slice = [&](std::size_t t) { return std::min(chunk, n - t * chunk); };
  // Each thread touches its own part first, so that its pages are local to its CPU.
  on_every_cpu(cpus, [&](std::size_t t) {
    std::memset(a.get() + t * chunk, 1, slice(t));
    std::memset(b.get() + t * chunk, 2, slice(t));
  });
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    const double s = on_every_cpu(
        cpus, [&](std::size_t t) { std::memcpy(b.get() + t * chunk, a.get() + t * chunk, slice(t)); });
    if (rep > 0) best = std::max(best, 2.0 * static_cast<double>(chunk * cpus.size()) / s);  // read + write
  }
  g_sink = g_sink + static_cast<float>(b[n / 2]);
  Measured p;
  p.per_s = best;
  p.method = std::to_string(cpus.size()) + " pinned threads copying " + std::to_string(bytes >> 20) +
             " MiB in parts, best of 3";
  return p;
}

}  // namespace kforge::runner
