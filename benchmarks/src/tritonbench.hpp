// Internal to kforge_benchmarks: the TritonBench layout, used by load_suite (task.cpp).
#pragma once

#include <filesystem>
#include <vector>

#include "kforge/benchmarks/task.hpp"

namespace kforge {

/// One channel of a TritonBench checkout: its folder of .py files and the folder holding its
/// stats file (data/).
struct TritonBenchChannel {
  TaskFormat format;
  std::filesystem::path folder;
  std::filesystem::path data;
};

/// True when `root` is a TritonBench checkout, its data/ folder, or one channel folder; fills
/// the channels found (T before G).
bool detect_tritonbench(const std::filesystem::path& root, std::vector<TritonBenchChannel>& channels);

/// Loads the channels into `s`: tasks, skipped files with the reason, notes on the quirks met.
void load_tritonbench(Suite& s, const std::vector<TritonBenchChannel>& channels);

}  // namespace kforge
