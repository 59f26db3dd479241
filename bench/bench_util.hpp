// bench/bench_util.hpp — small helpers shared by the bench/ programs: a table printer and
// JSON output. Each program prints a table and writes its numbers as JSON to argv[1]
// (default: bench-<name>.json in the working directory).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/common/util.hpp"

namespace kforge::bench {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

inline void write_json(int argc, char** argv, const std::string& name, const nlohmann::json& j) {
  std::string path = argc > 1 ? argv[1] : "bench-" + name + ".json";
  write_file(path, j.dump(2));
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace kforge::bench
