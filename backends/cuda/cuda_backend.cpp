// The cuda backend (docs/backends.md): CUDA C++ candidates built by nvcc into a shared object
// (shared CUDA runtime, cuBLAS/cuDNN on request) that kforge-host (backends/host) dlopens.
// Registered by its line in backends/CMakeLists.txt's KFORGE_BACKENDS (make_cuda_backend).
#include <cstdlib>
#include <system_error>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/cuda_diagnostics.hpp"
#include "kforge/backends/cuda_precision.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string device_type() const override { return "cuda"; }
  std::string prompt_language() const override { return "cuda"; }
  std::string source_file_name() const override { return "kernel.cu"; }
  std::vector<std::string> fence_languages() const override {
    return {"cuda", "cu", "cpp", "c++", "cxx", "cc", ""};
  }
  bool inspects_precision() const override { return true; }
  std::vector<DiagnosticDialect> diagnostic_dialects() const override { return cuda_diagnostic_dialects(); }
  PrecisionReport inspect_precision(const fs::path& artifact) const override {
    return sass_precision(artifact);
  }
  std::optional<fs::path> find_compiler(const CompileOptions& o) const override {
    if (!o.compiler.empty()) return find_executable(o.compiler);
    if (auto p = find_executable("nvcc")) return p;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home) {
      if (auto p = find_executable((fs::path(home) / "bin" / "nvcc").string())) return p;
    }
    return find_executable("/usr/local/cuda/bin/nvcc");
  }
  std::string target_arch(const CompileOptions& o) const override {
    if (!o.arch.empty()) return o.arch;
    if (auto a = detect_cuda_arch()) return *a;
    return "sm_90a";
  }
  std::vector<std::string> compile_argv(const fs::path& src, const fs::path& out_so,
                                        const CompileOptions& o) const override {
    const auto nvcc = find_compiler(o);
    std::vector<std::string> argv = {
        nvcc ? nvcc->string() : (o.compiler.empty() ? "nvcc" : o.compiler),
        "-O3",
        "-std=c++17",
        "-arch=" + target_arch(o),
        "-shared",
        "-Xcompiler",
        "-fPIC",
        // ptxas's per-kernel registers, spills and shared memory in the build log (issue 11 §1;
        // resource_usage.hpp reads them, also where cuobjdump is missing).
        "-Xptxas",
        "-v",
        // A shared CUDA runtime: the static one imports dlopen, sockets, ... which would hide
        // the candidate's own use of them from the symbol check.
        "--cudart",
        "shared",
        "-Xlinker",
        "--no-undefined",
    };
    if (nvcc) {
      // Let the runner find libcudart (and cuBLAS/cuDNN) of this toolkit without
      // LD_LIBRARY_PATH.
      std::error_code ec;
      const fs::path root = fs::canonical(*nvcc, ec).parent_path().parent_path();
      for (const auto& lib : {root / "lib64", root / "targets" / "x86_64-linux" / "lib"}) {
        if (!ec && fs::is_directory(lib, ec)) {
          argv.push_back("-Xlinker");
          argv.push_back("-rpath=" + lib.string());
          break;
        }
      }
    }
    argv.push_back("-I" + abi_include_dir(o).string());
    argv.insert(argv.end(), o.extra_flags.begin(), o.extra_flags.end());
    argv.insert(argv.end(), {"-o", out_so.string(), src.string()});
    if (o.allow_cublas) argv.insert(argv.end(), {"-lcublas", "-lcublasLt"});
    if (o.allow_cudnn) argv.push_back("-lcudnn");
    return argv;
  }
};

}  // namespace

std::shared_ptr<const Backend> make_cuda_backend() {
  return std::make_shared<CudaBackend>();
}

}  // namespace kforge::backends
