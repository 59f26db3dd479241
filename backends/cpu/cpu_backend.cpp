// The cpu backend (docs/backends.md): C++ candidates built by g++ into a shared object that
// kforge-host (backends/host) dlopens; OpenMP allowed. Registered by its line in
// backends/CMakeLists.txt's KFORGE_BACKENDS (make_cpu_backend).
#include <fstream>

#include "kforge/backends/backend.hpp"
#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

std::string cpu_model_name() {
  static const std::string model = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (starts_with(line, "model name")) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) return trim(line.substr(colon + 1));
      }
    }
    return std::string("unknown");
  }();
  return model;
}

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string device_type() const override { return "cpu"; }
  std::string prompt_language() const override { return "cpp"; }
  std::string source_file_name() const override { return "kernel.cpp"; }
  std::vector<std::string> fence_languages() const override { return {"cpp", "c++", "cxx", "cc", "c", ""}; }
  std::optional<fs::path> find_compiler(const CompileOptions& o) const override {
    return find_executable(o.compiler.empty() ? "g++" : o.compiler);
  }
  std::string target_arch(const CompileOptions&) const override { return "native:" + cpu_model_name(); }
  std::vector<std::string> compile_argv(const fs::path& src, const fs::path& out_so,
                                        const CompileOptions& o) const override {
    const auto cxx = find_compiler(o);
    std::vector<std::string> argv = {cxx ? cxx->string() : (o.compiler.empty() ? "g++" : o.compiler), "-O3",
                                     "-march=native", "-fopenmp", "-std=c++17", "-shared", "-fPIC",
                                     // An unresolved helper is a link error now, with the
                                     // linker's message, not a dlopen failure in the runner.
                                     "-Wl,--no-undefined", "-I" + abi_include_dir(o).string()};
    argv.insert(argv.end(), o.extra_flags.begin(), o.extra_flags.end());
    argv.insert(argv.end(), {"-o", out_so.string(), src.string()});
    return argv;
  }
};

}  // namespace

std::shared_ptr<const Backend> make_cpu_backend() {
  return std::make_shared<CpuBackend>();
}

}  // namespace kforge::backends
