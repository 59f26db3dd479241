#include "kforge/agent/hardware.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>
#include <utility>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::agent {

namespace {
std::string value_after_colon(const std::string& line) {
  auto c = line.find(':');
  return c == std::string::npos ? "" : trim(line.substr(c + 1));
}
int to_int(const std::string& s) {
  try {
    return std::stoi(s);
  } catch (...) {
    return 0;
  }
}
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}
}  // namespace

prompts::HardwareFacts parse_cpuinfo(std::string_view cpuinfo) {
  prompts::HardwareFacts f;
  f.kind = "cpu";
  std::set<std::pair<int, int>> cores;
  int logical = 0, cpu_cores = 0, physical = -1, packages = 0;
  std::set<int> package_ids;
  for (const auto& line : split_lines(cpuinfo)) {
    if (starts_with(line, "processor")) ++logical;
    if (starts_with(line, "model name") && f.name.empty()) f.name = value_after_colon(line);
    if (starts_with(line, "physical id")) {
      physical = to_int(value_after_colon(line));
      package_ids.insert(physical);
    }
    if (starts_with(line, "core id")) cores.insert({physical, to_int(value_after_colon(line))});
    if (starts_with(line, "cpu cores") && cpu_cores == 0) cpu_cores = to_int(value_after_colon(line));
  }
  packages = static_cast<int>(package_ids.size());
  f.threads = logical;
  f.cores = !cores.empty() ? static_cast<int>(cores.size()) : cpu_cores * std::max(packages, 1);
  if (f.cores == 0) f.cores = logical;
  return f;
}

prompts::HardwareFacts cpu_facts() {
  prompts::HardwareFacts f;
  try {
    f = parse_cpuinfo(read_file("/proc/cpuinfo"));
  } catch (...) {
    f.kind = "cpu";
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) f.threads = static_cast<int>(online);
  if (f.cores == 0) f.cores = f.threads;
  cpu_set_t set;
  CPU_ZERO(&set);
  int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : f.threads;
  f.omp_threads = allowed > 0 ? allowed : f.threads;
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && to_int(env) > 0) f.omp_threads = to_int(env);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    f.simd = "AVX-512";
    f.simd_bits = 512;
  } else if (__builtin_cpu_supports("avx2")) {
    f.simd = __builtin_cpu_supports("fma") ? "AVX2 + FMA" : "AVX2";
    f.simd_bits = 256;
  } else if (__builtin_cpu_supports("avx")) {
    f.simd = "AVX";
    f.simd_bits = 256;
  } else {
    f.simd = "SSE4.2";
    f.simd_bits = 128;
  }
#elif defined(__aarch64__)
  f.simd = "NEON";
  f.simd_bits = 128;
#endif
  f.compiler = "g++ -O3 -march=native -fopenmp -std=c++17";
  return f;
}

void add_known_gpu_specs(prompts::HardwareFacts& f) {
  struct Spec {
    const char* needle;
    int sms;
    double gbps;
    int l2_mib;
  };
  // Vendor datasheet figures; the more specific names first.
  static const Spec kSpecs[] = {
      {"H200", 132, 4800, 50},
      {"H100 NVL", 132, 3900, 50},
      {"H100 PCIe", 114, 2000, 50},
      {"H100", 132, 3350, 50},
      {"A100-SXM4-80GB", 108, 2039, 40},
      {"A100 80GB PCIe", 108, 1935, 40},
      {"A100", 108, 1555, 40},
      {"L40S", 142, 864, 96},
      {"L4", 58, 300, 48},
      {"RTX 4090", 128, 1008, 72},
      {"A10G", 80, 600, 6},
      {"A10", 72, 600, 6},
      {"T4", 40, 320, 4},
      {"V100", 80, 900, 6},
  };
  for (const auto& s : kSpecs) {
    if (f.name.find(s.needle) == std::string::npos) continue;
    if (f.sm_count == 0) f.sm_count = s.sms;
    if (f.spec_bandwidth_gbps == 0) f.spec_bandwidth_gbps = s.gbps;
    if (f.l2_kib == 0) f.l2_kib = s.l2_mib * 1024;
    return;
  }
}

prompts::HardwareFacts parse_cuda_facts(const nlohmann::json& hello, int index, std::string_view smi_csv) {
  prompts::HardwareFacts f;
  f.kind = "cuda";
  for (const auto& line : split_lines(smi_csv)) {
    auto c = split_csv(line);
    if (c.size() < 3 || to_int(c[0]) != index || c[0].empty() ||
        !std::isdigit(static_cast<unsigned char>(c[0][0])))
      continue;
    f.name = c[1];
    try {
      f.memory_gib = std::stod(c[2]) / 1024.0;  // MiB
    } catch (...) {
    }
    if (c.size() > 3 && c[3].find('.') != std::string::npos) f.compute_capability = c[3];
  }
  if (hello.is_object() && hello.contains("devices") && hello["devices"].is_array()) {
    for (const auto& d : hello["devices"]) {
      if (!d.is_object() || d.value("index", -1) != index) continue;
      if (d.contains("name") && d["name"].is_string()) f.name = d["name"].get<std::string>();
      if (d.contains("cc") && d["cc"].is_string()) f.compute_capability = d["cc"].get<std::string>();
      if (d.contains("memory_bytes") && d["memory_bytes"].is_number())
        f.memory_gib = d["memory_bytes"].get<double>() / (1024.0 * 1024.0 * 1024.0);
      for (const char* k : {"sm_count", "multi_processor_count"})
        if (d.contains(k) && d[k].is_number_integer()) f.sm_count = d[k].get<int>();
      if (d.contains("l2_bytes") && d["l2_bytes"].is_number())
        f.l2_kib = static_cast<int>(d["l2_bytes"].get<double>() / 1024);
    }
  }
  add_known_gpu_specs(f);
  f.compiler = "nvcc -O3 -std=c++17";
  return f;
}

prompts::HardwareFacts cuda_facts(const nlohmann::json& hello, int index) {
  sandbox::Spec spec;
  spec.argv = {"nvidia-smi", "--query-gpu=index,name,memory.total,compute_cap",
               "--format=csv,noheader,nounits"};
  spec.limits.wall = std::chrono::milliseconds(10'000);
  std::string smi;
  auto r = sandbox::run(spec);
  if (r.ok()) smi = r.out;
  return parse_cuda_facts(hello, index, smi);
}

prompts::HardwareFacts device_facts(const nlohmann::json& hello, const std::string& device) {
  return device == "cpu" ? cpu_facts() : cuda_facts(hello, cuda_index(device));
}

int cuda_index(const std::string& device) {
  auto c = device.find(':');
  if (c == std::string::npos) return 0;
  return std::max(0, to_int(device.substr(c + 1)));
}

}  // namespace kforge::agent
