// The fake backend (tests only; tests/fake_backend/CMakeLists.txt): a backend written by the
// checklist of docs/ARCHITECTURE.md "Adding a backend". Its candidates are C++ in a `fake`
// fence, written to kernel.fake and built by g++ (-x c++) into a shared object for kforge-host.
#include "kforge/backends/backend.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

class FakeBackend final : public Backend {
 public:
  std::string name() const override { return "fake"; }
  std::string device_type() const override { return "cpu"; }
  std::string prompt_language() const override { return "fake"; }
  // Its folder is tests/fake_backend, not backends/fake: the prompts live beside this file.
  fs::path prompts_dir() const override { return fs::path(KFORGE_FAKE_BACKEND_DIR) / "prompts"; }
  std::string source_file_name() const override { return "kernel.fake"; }
  std::vector<std::string> fence_languages() const override { return {"fake"}; }
  std::optional<fs::path> find_compiler(const CompileOptions& o) const override {
    return find_executable(o.compiler.empty() ? "g++" : o.compiler);
  }
  std::string target_arch(const CompileOptions&) const override { return "fake"; }
  std::vector<std::string> compile_argv(const fs::path& src, const fs::path& out_so,
                                        const CompileOptions& o) const override {
    const auto cxx = find_compiler(o);
    return {cxx ? cxx->string() : "g++",
            "-O1",
            "-shared",
            "-fPIC",
            "-Wl,--no-undefined",
            "-I" + abi_include_dir(o).string(),
            "-o",
            out_so.string(),
            "-x",
            "c++",
            src.string()};
  }
};

}  // namespace

std::shared_ptr<const Backend> make_fake_backend() {
  return std::make_shared<FakeBackend>();
}

}  // namespace kforge::backends
