#pragma once
// kforge/backends/resource_usage.hpp — a CUDA artifact's per-kernel resources at compile time
// (issue 11 §1): registers per thread, stack frame, static shared memory, constant bank, and the
// spill bytes where ptxas -v output is at hand. Parsers are pure; resource_usage() runs
// `cuobjdump --dump-resource-usage` through sandbox::run.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/common/profile.hpp"

namespace kforge::backends {

/// Parses `cuobjdump --dump-resource-usage` output: one entry per " Function <mangled>:" line
/// with its "REG:n STACK:n SHARED:n LOCAL:n CONSTANT[0]:n ..." line, under the current
/// "arch = sm_XX". A kernel listed under several arches is kept once (its first arch).
std::vector<KernelResources> parse_cuobjdump_resource_usage(std::string_view text);

/// Parses ptxas -v output (nvcc -Xptxas -v): per "Function properties for <mangled>" the
/// stack frame and spill store/load bytes, and the "Used N registers ... N bytes smem" line.
std::vector<KernelResources> parse_ptxas_verbose(std::string_view log);

/// Fills the spill bytes (and any unknown field) of `kernels` from ptxas -v entries of the same
/// kernel; ptxas kernels missing from `kernels` are appended.
void merge_resources(std::vector<KernelResources>& kernels, const std::vector<KernelResources>& ptxas);

/// The demangled name of a C++ symbol (itself when it does not demangle).
std::string demangle(const std::string& mangled);

/// cuobjdump: KFORGE_CUOBJDUMP, PATH, next to `nvcc`, $CUDA_HOME/bin, /usr/local/cuda/bin.
std::optional<std::filesystem::path> find_cuobjdump(const std::optional<std::filesystem::path>& nvcc = {});

struct ResourceUsage {
  std::vector<KernelResources> kernels;
  std::string note;  ///< why nothing was measured, or what is missing (spills without ptxas -v)
  double ms = 0;     ///< wall time of the cuobjdump run
};

/// Runs cuobjdump on the artifact in the sandbox and parses it; `build_log` adds spill bytes
/// when it holds ptxas -v output. Never throws: a missing tool or a failed run is a note.
ResourceUsage resource_usage(const std::filesystem::path& artifact, std::string_view build_log = {},
                             const std::optional<std::filesystem::path>& nvcc = {});

/// One line per kernel: "spill_kernel: 32 registers/thread, 256 B stack, spills 0 B stores /
/// 0 B loads, 2048 B static shared memory".
std::string describe_resources(const std::vector<KernelResources>& kernels);

}  // namespace kforge::backends
