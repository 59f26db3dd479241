#pragma once
// tests/unit/scratch_dir.hpp — a fresh, empty directory under the build tree for one test
// (KFORGE_BUILD_DIR/test-scratch/<name>), kept after the test for inspection. Not thread-safe
// for one name.
#include <filesystem>
#include <string>

inline std::filesystem::path scratch(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(KFORGE_BUILD_DIR) / "test-scratch" / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}
