// The triton backend (docs/backends.md): Python candidates with @triton.jit kernels. Everything that
// differs from the C-ABI backends lives in this folder: this file, the scan (triton_scan.cpp,
// ast_scan.py) and the Python candidate host the judge starts for it (HostKind::python:
// host.py): the artifact is the module itself, its "build" is the static scan
// (backends/triton/ast_scan.py: syntax, then what a kernel has no use for), and the import and
// Triton's JIT happen in the confined host on the first call.
#include <cstdlib>
#include <regex>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/backends/python_errors.hpp"
#include "kforge/backends/triton_scan.hpp"
#include "kforge/common/util.hpp"

#ifndef KFORGE_DEFAULT_PYTHON
#define KFORGE_DEFAULT_PYTHON "python3"
#endif

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

/// True when `source` defines a top-level function `name` (a `def` at column 0).
bool defines_python_function(std::string_view source, std::string_view name) {
  const std::regex def("^(async\\s+)?def\\s+" + std::string(name) + "\\s*\\(");
  for (const auto& line : split_lines(source))
    if (std::regex_search(line, def)) return true;
  return false;
}

/// The build of a Python module: writes it, runs the static scan (triton_scan.hpp) and, when it
/// finds nothing, makes the module the artifact. A syntax error is compile_error/syntax, a
/// finding forbidden_api (the rule in `forbidden`), a scan that cannot run toolchain_missing.
CompileResult build_python_module(const Backend& backend, const std::string& source, const fs::path& workdir,
                                  const CompileOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  std::error_code ec;
  fs::create_directories(workdir, ec);
  if (ec) throw std::runtime_error(workdir.string() + ": cannot create work directory: " + ec.message());
  r.source_path = fs::absolute(workdir / backend.source_file_name());
  write_file(r.source_path, source);
  r.argv = backend.compile_argv(backend.source_file_name(), "", options);
  auto finish = [&]() -> CompileResult {
    r.wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    return std::move(r);
  };
  const auto py = backend.find_compiler(options);
  if (!py) {
    r.status = CompileStatus::toolchain_missing;
    r.summary = "The Python interpreter (" + r.argv.front() + ") was not found.";
    return finish();
  }
  ScanOptions so;
  so.python = py->string();
  const ScanResult scan = scan_triton_candidate(r.source_path, so);
  r.log = "$ " + r.argv.front() + " -I -B ast_scan.py kernel.py\n" + scan.summary(50);
  switch (scan.outcome) {
    case Outcome::pass:
      r.status = CompileStatus::ok;
      r.artifact = r.source_path;  // the module is the artifact: the host imports it
      break;
    case Outcome::compile_error:
      r.status = CompileStatus::compile_error;
      r.sub_kind = CompileErrorKind::syntax;
      r.summary = scan.summary();
      break;
    case Outcome::forbidden_api:
      r.status = CompileStatus::forbidden_api;
      for (const auto& f : scan.findings) r.forbidden.push_back({f.what, f.what, f.rule, false});
      r.summary = scan.summary();
      break;
    default:
      r.status = CompileStatus::toolchain_missing;  // the scan itself failed: kforge's fault
      r.summary = "The static scan of the candidate failed: " + scan.error;
      break;
  }
  return finish();
}

class TritonBackend final : public Backend {
 public:
  std::string name() const override { return "triton"; }
  /// On a GPU where one is visible; else Triton's interpreter runs the kernels on the CPU.
  std::string device_type() const override { return detect_cuda_arch() ? "cuda" : "cpu"; }
  std::string prompt_language() const override { return "python"; }
  ArtifactKind artifact_kind() const override { return ArtifactKind::python_module; }
  HostKind host_kind() const override { return HostKind::python; }  // backends/triton/host.py
  std::string source_file_name() const override { return "kernel.py"; }
  std::vector<std::string> fence_languages() const override { return {"python", "py", "python3", ""}; }

  Extracted extract(std::string_view reply) const override {
    Extracted r;
    const auto langs = fence_languages();
    const FencedBlock* chosen = nullptr;
    const auto blocks = fenced_blocks(reply);
    for (const auto& b : blocks) {
      if (std::find(langs.begin(), langs.end(), b.language) == langs.end()) continue;
      ++r.blocks_seen;
      if (defines_python_function(b.body, "kf_forward")) chosen = &b;  // the last one wins
    }
    if (chosen) {
      r.ok = true;
      r.source = chosen->body;
      r.language = chosen->language;
      return r;
    }
    r.error = r.blocks_seen == 0 ? ExtractError::no_code_block : ExtractError::no_entry_point;
    r.message = r.blocks_seen == 0 ? "The reply contains no fenced code block (```python)."
                                   : "None of the " + std::to_string(r.blocks_seen) +
                                         " code block(s) in the reply defines the entry point "
                                         "`def kf_forward(*inputs)` at the top level of the module.";
    return r;
  }

  /// The interpreter that scans the candidate: CompileOptions::compiler, else $KFORGE_PYTHON,
  /// else the interpreter kforge was built with (the one with torch and triton).
  std::optional<fs::path> find_compiler(const CompileOptions& o) const override {
    if (!o.compiler.empty()) return find_executable(o.compiler);
    if (const char* p = std::getenv("KFORGE_PYTHON"); p && *p) return find_executable(p);
    if (auto p = find_executable(KFORGE_DEFAULT_PYTHON)) return p;
    return find_executable("python3");
  }
  std::string target_arch(const CompileOptions&) const override { return "python"; }
  std::vector<std::string> compile_argv(const fs::path& src, const fs::path&,
                                        const CompileOptions& o) const override {
    const auto py = find_compiler(o);
    return {py ? py->string() : "python3", "-I", "-B", ast_scan_script().string(), src.string()};
  }
  bool build(const std::string& source, const fs::path& workdir, const CompileOptions& o,
             CompileResult* out) const override {
    *out = build_python_module(*this, source, workdir, o);
    return true;
  }
  std::optional<FailureExplanation> explain_failure(const FailureFacts& facts) const override {
    return explain_python_failure(facts);
  }
  void prewarm(int concurrency, const CompileOptions& o) const override {
    if (const auto py = find_compiler(o)) {
      ScanOptions so;
      so.python = py->string();
      prewarm_triton_scanners(concurrency, so);
    }
  }
};

}  // namespace

std::shared_ptr<const Backend> make_triton_backend() {
  return std::make_shared<TritonBackend>();
}

}  // namespace kforge::backends
