#include "candidate_file.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace kforge {

std::filesystem::path candidate_file(const std::filesystem::path& dir, const std::string& backend) {
  std::vector<std::string> names{"kernel.cu", "kernel.cpp", "kernel.py"};
  const std::map<std::string, std::string> own{
      {"cuda", "kernel.cu"}, {"cpu", "kernel.cpp"}, {"triton", "kernel.py"}};
  if (auto o = own.find(backend); o != own.end())
    std::stable_partition(names.begin(), names.end(), [&](const std::string& n) { return n == o->second; });
  std::error_code ec;
  for (const auto& n : names)
    if (std::filesystem::is_regular_file(dir / n, ec)) return dir / n;
  return {};
}

}  // namespace kforge
