#include "kforge/prompts/hardware.hpp"

#include <algorithm>
#include <cstdio>

#include "kforge/common/util.hpp"

namespace kforge::prompts {

std::string device_line(const HardwareFacts& f) {
  if (f.name.empty()) return "";
  std::string s = f.name;
  std::string extra;
  auto add = [&](const std::string& part) { extra += (extra.empty() ? "" : ", ") + part; };
  if (f.kind == "cuda") {
    if (f.sm_count > 0) add(std::to_string(f.sm_count) + " SMs");
    if (!f.compute_capability.empty()) add("compute capability " + f.compute_capability);
  } else {
    if (f.cores > 0) add(std::to_string(f.cores) + " cores");
    if (f.threads > 0) add(std::to_string(f.threads) + " threads");
  }
  if (!extra.empty()) s += " (" + extra + ")";
  return s;
}

std::string describe(const HardwareFacts& f) {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += "- " + k + ": " + v + "\n"; };
  if (!f.name.empty()) line(f.kind == "cuda" ? "GPU" : "CPU", f.name);
  if (f.kind == "cuda") {
    if (!f.compute_capability.empty()) {
      std::string arch = f.compute_capability;
      arch.erase(std::remove(arch.begin(), arch.end(), '.'), arch.end());
      line("compute capability", f.compute_capability + " (compiled with -arch=sm_" + arch + ")");
    }
    if (f.sm_count > 0) line("streaming multiprocessors", std::to_string(f.sm_count));
    if (f.memory_gib > 0) line("device memory", format_double("%.0f GiB", f.memory_gib));
    if (f.spec_bandwidth_gbps > 0)
      line("DRAM bandwidth (vendor figure)", format_double("%.0f GB/s", f.spec_bandwidth_gbps));
    if (f.l2_kib > 0) line("L2 cache", format_double("%.0f MiB", f.l2_kib / 1024.0));
    if (f.smem_per_block_kib > 0)
      line("shared memory per block (opt-in)", std::to_string(f.smem_per_block_kib) + " KiB");
    if (f.measured_dram_gbps > 0)
      line("measured DRAM bandwidth (fills and copies)", format_double("%.0f GB/s", f.measured_dram_gbps));
    if (f.measured_fp32_tflops > 0)
      line("measured FP32 rate (matmul)", format_double("%.1f TFLOP/s", f.measured_fp32_tflops));
  } else {
    if (f.cores > 0) line("physical cores", std::to_string(f.cores));
    if (f.threads > 0) line("hardware threads", std::to_string(f.threads));
    if (f.omp_threads > 0)
      line("OpenMP threads the kernel gets",
           std::to_string(f.omp_threads) + " (OMP_NUM_THREADS = hardware threads)");
    if (!f.simd.empty())
      line("SIMD", f.simd + (f.simd_bits > 0 ? " (" + std::to_string(f.simd_bits) + "-bit vectors, " +
                                                   std::to_string(f.simd_bits / 32) + " floats)"
                                             : std::string()));
    // Measured by every core at once (backends/judge/peak_cpu.cpp): a kernel can reach them.
    if (f.measured_dram_gbps > 0)
      line("measured memory bandwidth (all cores copying)", format_double("%.0f GB/s", f.measured_dram_gbps));
    if (f.measured_fp32_tflops > 0)
      line("measured FP32 peak (all cores, vector FMA)",
           format_double("%.2f TFLOP/s", f.measured_fp32_tflops));
  }
  if (!f.compiler.empty()) line("compiler", f.compiler);
  if (s.empty()) s = "- (unknown)\n";
  return s;
}

}  // namespace kforge::prompts
