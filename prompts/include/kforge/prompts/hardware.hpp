#pragma once
// kforge/prompts/hardware.hpp — what the prompt says about the machine a kernel runs on
// (issue 11 §3). HardwareFacts is plain data: the agent fills it (agent/hardware.hpp: runner
// hello, nvidia-smi, sysconf, cpuid); tests build it by hand with fixed values. A field left at
// its default (0 or "") is unknown and not printed. describe() renders the facts as a short
// Markdown bullet list; it is pure and thread-safe.
#include <string>

namespace kforge::prompts {

struct HardwareFacts {
  std::string kind;  ///< "cuda" or "cpu"
  std::string name;  ///< "NVIDIA H100 80GB HBM3", "AMD EPYC 9454 48-Core Processor"

  // --- cuda -------------------------------------------------------------------------------
  std::string compute_capability;  ///< "9.0"
  int sm_count = 0;                ///< streaming multiprocessors
  double memory_gib = 0;           ///< device memory
  double spec_bandwidth_gbps = 0;  ///< the vendor's DRAM bandwidth figure, GB/s
  int l2_kib = 0;                  ///< L2 cache
  int smem_per_block_kib = 0;      ///< opt-in shared memory per block
  /// Measured once per device by the runner (benchmarks/roofline.hpp, DevicePeaks); 0 = not yet.
  double measured_dram_gbps = 0;
  double measured_fp32_tflops = 0;

  // --- cpu --------------------------------------------------------------------------------
  int cores = 0;         ///< physical cores
  int threads = 0;       ///< hardware threads (logical CPUs online)
  int omp_threads = 0;   ///< OpenMP threads the kernel gets (rule: = hardware threads)
  std::string simd;      ///< widest vector ISA the compiler targets with -march=native: "AVX-512"
  int simd_bits = 0;     ///< its register width: 512, 256, 128
  std::string compiler;  ///< "g++ 12.2, -O3 -march=native -fopenmp"
};

/// One line naming the device, e.g. "NVIDIA H100 80GB HBM3 (132 SMs, compute capability 9.0)"
/// or "AMD EPYC 9454 (48 cores / 96 threads)". "" when the name is unknown.
std::string device_line(const HardwareFacts& f);

/// A Markdown bullet list of the known facts (one fact per line), ending with a newline.
std::string describe(const HardwareFacts& f);

}  // namespace kforge::prompts
