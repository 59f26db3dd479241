#pragma once
// kforge/common/profile.hpp — plain data of the profile step (issue 11 §1), shared by the
// backends that measure it, the run records that keep it and the prompts that show it.
// Values only; header-only.
#include <string>

namespace kforge {

/// A CUDA kernel's resources at compile time (cuobjdump --dump-resource-usage; spills from
/// ptxas -v when the build log has it). -1 = unknown.
struct KernelResources {
  std::string name;              ///< demangled ("spill_kernel(float const*, float*, int)")
  std::string arch;              ///< "sm_90"
  int registers = -1;            ///< per thread
  int stack_bytes = -1;          ///< per-thread stack frame (local arrays and spills live here)
  int spill_store_bytes = -1;    ///< ptxas -v
  int spill_load_bytes = -1;     ///< ptxas -v
  int shared_static_bytes = -1;  ///< static shared memory per block
  int local_bytes = -1;
  int constant_bytes = -1;  ///< CONSTANT[0]: kernel parameters and constants
};

/// One telling metric of a profiled attempt with its one-line reading.
struct MetricFinding {
  std::string metric;  ///< the ncu metric name ("" for derived values)
  std::string label;   ///< short human name: "DRAM throughput"
  double value = 0;
  std::string unit;            ///< "%", "GB", "sectors/request", ...
  std::string interpretation;  ///< "memory-bound: DRAM at 91% of peak"
  double score = 0;            ///< how telling (ranking only)
};

/// A kernel's name without its parameter list, for one-line display: "gelu(float const*, int)"
/// -> "gelu", "(anonymous namespace)::gelu(float const*)" -> "(anonymous namespace)::gelu".
inline std::string kernel_display_name(std::string name) {
  const std::string anon = "(anonymous namespace)::";
  std::size_t from = 0;
  for (std::size_t p; (p = name.find(anon, from)) != std::string::npos;) from = p + anon.size();
  if (const auto p = name.find('(', from); p != std::string::npos) name.resize(p);
  return name;
}

/// The time of one kernel launched during the profiled call.
struct KernelTime {
  std::string name;
  double ms = 0;  ///< summed over its launches
  int launches = 0;
};

}  // namespace kforge
