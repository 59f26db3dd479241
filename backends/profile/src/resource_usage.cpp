#include "kforge/backends/resource_usage.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

namespace {
int field(const std::string& line, const char* key) {
  auto p = line.find(key);
  if (p == std::string::npos) return -1;
  p += std::char_traits<char>::length(key);
  int v = 0;
  bool any = false;
  while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))) {
    v = v * 10 + (line[p++] - '0');
    any = true;
  }
  return any ? v : -1;
}
KernelResources* find_kernel(std::vector<KernelResources>& v, const std::string& name) {
  for (auto& k : v)
    if (k.name == name) return &k;
  return nullptr;
}
}  // namespace

std::vector<KernelResources> parse_cuobjdump_resource_usage(std::string_view text) {
  static const std::regex kArch(R"(^arch = (sm_[0-9a-z]+)\s*$)");
  static const std::regex kFunc(R"(^\s*Function (\S+):\s*$)");
  std::vector<KernelResources> out;
  std::string arch;
  KernelResources* cur = nullptr;
  bool skip = false;
  for (const auto& line : split_lines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, kArch)) {
      arch = m[1].str();
      cur = nullptr;
      continue;
    }
    if (std::regex_match(line, m, kFunc)) {
      const std::string name = demangle(m[1].str());
      skip = find_kernel(out, name) != nullptr;  // same kernel for another arch
      if (!skip) {
        out.push_back({});
        out.back().name = name;
        out.back().arch = arch;
        cur = &out.back();
      } else {
        cur = nullptr;
      }
      continue;
    }
    if (cur && line.find("REG:") != std::string::npos) {
      cur->registers = field(line, "REG:");
      cur->stack_bytes = field(line, "STACK:");
      cur->shared_static_bytes = field(line, "SHARED:");
      cur->local_bytes = field(line, "LOCAL:");
      cur->constant_bytes = field(line, "CONSTANT[0]:");
      cur = nullptr;
    }
  }
  return out;
}

std::vector<KernelResources> parse_ptxas_verbose(std::string_view log) {
  static const std::regex kProps(R"(Function properties for (\S+))");
  static const std::regex kFrame(
      R"(([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  static const std::regex kUsed(R"(Used ([0-9]+) registers)");
  static const std::regex kSmem(R"(([0-9]+) bytes smem)");
  static const std::regex kEntry(R"(Compiling entry function '([^']+)' for '(sm_[0-9a-z]+)')");
  std::vector<KernelResources> out;
  KernelResources* cur = nullptr;
  std::string arch;
  for (const auto& line : split_lines(log)) {
    std::smatch m;
    if (std::regex_search(line, m, kEntry)) {
      arch = m[2].str();
      continue;
    }
    if (std::regex_search(line, m, kProps)) {
      const std::string name = demangle(m[1].str());
      cur = find_kernel(out, name);
      if (!cur) {
        out.push_back({});
        out.back().name = name;
        out.back().arch = arch;
        cur = &out.back();
      }
      continue;
    }
    if (!cur) continue;
    if (std::regex_search(line, m, kFrame)) {
      cur->stack_bytes = std::stoi(m[1].str());
      cur->spill_store_bytes = std::stoi(m[2].str());
      cur->spill_load_bytes = std::stoi(m[3].str());
    } else if (std::regex_search(line, m, kUsed)) {
      cur->registers = std::stoi(m[1].str());
      std::smatch s;
      cur->shared_static_bytes = std::regex_search(line, s, kSmem) ? std::stoi(s[1].str()) : 0;
      cur = nullptr;  // the "Used" line closes the entry
    }
  }
  return out;
}

void merge_resources(std::vector<KernelResources>& kernels, const std::vector<KernelResources>& ptxas) {
  for (const auto& p : ptxas) {
    KernelResources* k = find_kernel(kernels, p.name);
    if (!k) {
      kernels.push_back(p);
      continue;
    }
    k->spill_store_bytes = p.spill_store_bytes;
    k->spill_load_bytes = p.spill_load_bytes;
    if (k->registers < 0) k->registers = p.registers;
    if (k->stack_bytes < 0) k->stack_bytes = p.stack_bytes;
    if (k->shared_static_bytes < 0) k->shared_static_bytes = p.shared_static_bytes;
  }
}

std::optional<fs::path> find_cuobjdump(const std::optional<fs::path>& nvcc) {
  std::vector<fs::path> candidates;
  if (const char* e = std::getenv("KFORGE_CUOBJDUMP"); e && *e) candidates.emplace_back(e);
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const auto colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) candidates.push_back(fs::path(dir) / "cuobjdump");
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  if (nvcc) candidates.push_back(nvcc->parent_path() / "cuobjdump");
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    candidates.push_back(fs::path(home) / "bin/cuobjdump");
  candidates.emplace_back("/usr/local/cuda/bin/cuobjdump");
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return std::nullopt;
}

ResourceUsage resource_usage(const fs::path& artifact, std::string_view build_log,
                             const std::optional<fs::path>& nvcc) {
  ResourceUsage r;
  const auto ptxas = parse_ptxas_verbose(build_log);
  auto tool = find_cuobjdump(nvcc);
  if (!tool) {
    r.kernels = ptxas;
    r.note = "cuobjdump not found (set KFORGE_CUOBJDUMP or put the CUDA toolkit's bin on PATH)";
    if (!ptxas.empty()) r.note += "; registers, spills and shared memory from the build's ptxas -v";
    return r;
  }
  sandbox::Spec spec;
  spec.argv = {tool->string(), "--dump-resource-usage", artifact.string()};
  spec.limits.wall = std::chrono::milliseconds(30'000);
  auto res = sandbox::run(spec);
  r.ms = static_cast<double>(res.wall.count());
  if (!res.ok()) {
    r.kernels = ptxas;
    r.note = std::string("cuobjdump failed (") + sandbox::to_string(res.status) +
             "): " + truncate_middle(trim(res.err.empty() ? res.error : res.err), 300);
    return r;
  }
  r.kernels = parse_cuobjdump_resource_usage(res.out);
  merge_resources(r.kernels, ptxas);
  if (r.kernels.empty()) r.note = "cuobjdump listed no kernel";
  bool spills_known = false;
  for (const auto& k : r.kernels) spills_known = spills_known || k.spill_store_bytes >= 0;
  if (!r.kernels.empty() && !spills_known)
    r.note = "spill bytes unknown (the build ran without -Xptxas -v); stack bytes include spills";
  return r;
}

std::string describe_resources(const std::vector<KernelResources>& kernels) {
  std::string s;
  for (const auto& k : kernels) {
    s += kernel_display_name(k.name) + ":";
    std::string parts;
    auto add = [&](const std::string& x) { parts += (parts.empty() ? " " : ", ") + x; };
    if (k.registers >= 0) add(std::to_string(k.registers) + " registers/thread");
    if (k.stack_bytes >= 0) add(std::to_string(k.stack_bytes) + " B stack");
    if (k.spill_store_bytes >= 0)
      add("spills " + std::to_string(k.spill_store_bytes) + " B stores / " +
          std::to_string(k.spill_load_bytes) + " B loads");
    if (k.shared_static_bytes >= 0) add(std::to_string(k.shared_static_bytes) + " B static shared memory");
    s += parts + "\n";
  }
  return s;
}

}  // namespace kforge::backends
