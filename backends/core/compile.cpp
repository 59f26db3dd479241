#include "kforge/backends/compile.hpp"

#include <regex>
#include <set>
#include <system_error>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/compile_cache.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

std::string_view to_string(CompileStatus s) {
  switch (s) {
    case CompileStatus::ok:
      return "ok";
    case CompileStatus::compile_error:
      return "compile_error";
    case CompileStatus::forbidden_api:
      return "forbidden_api";
    case CompileStatus::timeout:
      return "timeout";
    case CompileStatus::toolchain_missing:
      return "toolchain_missing";
  }
  return "toolchain_missing";
}

std::optional<Outcome> CompileResult::outcome() const {
  switch (status) {
    case CompileStatus::compile_error:
      return Outcome::compile_error;
    case CompileStatus::forbidden_api:
      return Outcome::forbidden_api;
    case CompileStatus::timeout:
      return Outcome::timeout;
    case CompileStatus::ok:
    case CompileStatus::toolchain_missing:
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

std::string join_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

/// Forbidden symbols named in linker "undefined reference to `X'" errors: with
/// --no-undefined a torch or Python reference fails the link instead of reaching nm.
std::vector<ForbiddenUse> forbidden_in_link_errors(const std::vector<Diagnostic>& diags,
                                                   const SymbolPolicy& policy) {
  static const std::regex kRef(R"(undefined (?:reference|symbol)[^`'"]*[`'"]([^`'"]+)['"])");
  std::vector<ForbiddenUse> out;
  std::set<std::string> seen;
  for (const auto& d : diags) {
    if (d.severity != Severity::error) continue;
    std::smatch m;
    if (!std::regex_search(d.message, m, kRef)) continue;
    const std::string name = m[1].str();
    if (!seen.insert(name).second) continue;
    // Only the named rules: a reference nothing defines ("unlisted") is the kernel's own
    // compile error (a helper it forgot to write), not a forbidden API.
    if (auto rule = forbidden_symbol_rule(name, policy); rule && *rule != "unlisted")
      out.push_back({name, name, *rule, false});
  }
  return out;
}

std::string forbidden_summary(const std::vector<ForbiddenUse>& uses) {
  return "The kernel references APIs that kernels may not use (a kernel may import only memory, string, "
         "math, thread, clock and output functions of the C and C++ libraries, OpenMP and the CUDA "
         "runtime: no PyTorch/ATen, Python, dynamic loading, processes, sockets, environment, identity "
         "or file-system queries):\n" +
         describe_forbidden(uses);
}

std::string tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "...\n" + s.substr(s.size() - n);
}

}  // namespace

/// The post-build checks of an artifact (the symbol check), for a fresh build and for every
/// cache hit alike: sets r's status, and r.artifact when it passes.
void check_artifact(CompileResult& r, const fs::path& artifact, const SymbolPolicy& policy) {
  std::error_code ec;
  const auto report = check_symbols(artifact, policy);
  if (!report.tools_ok) {
    r.status = CompileStatus::toolchain_missing;
    r.summary = "The symbol check could not run: " + report.error;
  } else if (!report.forbidden.empty()) {
    r.status = CompileStatus::forbidden_api;
    r.forbidden = report.forbidden;
    r.summary = forbidden_summary(r.forbidden);
    fs::remove(artifact, ec);  // nobody may load it
  } else {
    r.status = CompileStatus::ok;
    r.artifact = artifact;
  }
}

namespace {

/// The compile cache's key of this build: the source and the ABI header, the argv, the symbol
/// policy (it decides whether an artifact is accepted), the compiler's version, the target.
std::string cache_key(const Backend& backend, const std::string& source, const std::string& src_name,
                      const CompileResult& r, const SymbolPolicy& policy, const CompileOptions& options) {
  std::error_code ec;
  sandbox::CompileKey key;
  key.sources.emplace_back(src_name, source);
  const fs::path abi_header = abi_include_dir(options) / "kforge" / "kernel_abi.h";
  if (fs::is_regular_file(abi_header, ec))
    key.sources.emplace_back("kforge/kernel_abi.h", read_file(abi_header));
  key.flags = r.argv;
  key.flags.push_back(std::string("#kforge-policy:cublas=") + (policy.allow_cublas ? "1" : "0") +
                      ",cudnn=" + (policy.allow_cudnn ? "1" : "0"));
  key.compiler_version = r.compiler_version;
  key.target_arch = backend.target_arch(options);
  return key.hash();
}

/// A failed compiler run as r's status (forbidden_api from its link errors, else compile_error
/// with the first error's kind and a summary); `output` is what it printed.
void compiler_failed(CompileResult& r, const sandbox::Result& res, const std::string& output,
                     const SymbolPolicy& policy, const CompileOptions& options) {
  r.forbidden = forbidden_in_link_errors(r.diagnostics, policy);
  if (!r.forbidden.empty()) {
    r.status = CompileStatus::forbidden_api;
    r.summary = forbidden_summary(r.forbidden);
    return;
  }
  r.status = CompileStatus::compile_error;
  r.sub_kind = classify_first_error(r.diagnostics).value_or(CompileErrorKind::other);
  r.summary = summarise(r.diagnostics, options.summary_max_errors, options.summary_max_bytes);
  if (r.summary.empty()) {
    const std::string how = res.status == sandbox::Status::signalled
                                ? "was killed by signal " + std::to_string(res.term_signal)
                                : "exited with status " + std::to_string(res.exit_code);
    r.summary = "The compiler " + how + " without a recognisable error message. Output:\n" +
                tail(output, options.summary_max_bytes / 2);
  }
}

/// Runs the compiler in the sandbox and reads its result into r (log, diagnostics, status; the
/// artifact checked when it built one).
void run_compiler(CompileResult& r, const Backend& backend, const std::string& source,
                  const std::string& src_name, const fs::path& workdir, const fs::path& artifact,
                  const SymbolPolicy& policy, const CompileOptions& options) {
  sandbox::Spec spec;
  spec.argv = r.argv;
  spec.cwd = workdir;
  spec.env_set["LC_ALL"] = "C";  // ASCII quotes in messages
  spec.env_set["LANG"] = "C";
  spec.limits.wall = options.timeout;
  spec.limits.output_cap_bytes = options.log_cap_bytes;
  const auto res = sandbox::run(spec);
  std::string output = res.err;
  if (!res.out.empty()) output += (output.empty() || output.back() == '\n' ? "" : "\n") + res.out;
  r.log = truncate_middle("$ " + join_argv(r.argv) + "\n" + output, options.log_cap_bytes);
  if (res.status == sandbox::Status::failed_to_start) {
    r.status = CompileStatus::toolchain_missing;
    r.summary = "Could not start the compiler " + r.argv.front() + ": " + res.error;
    return;
  }
  r.diagnostics = parse_diagnostics(output, source, src_name, backend.diagnostic_dialects());
  std::error_code ec;
  if (res.status == sandbox::Status::timed_out) {
    r.status = CompileStatus::timeout;
    r.summary = "The compiler did not finish within " +
                (options.timeout.count() % 1000 == 0 ? std::to_string(options.timeout.count() / 1000) + " s"
                                                     : std::to_string(options.timeout.count()) + " ms") +
                "; simplify the code (heavy templates or unrolling?).";
  } else if (!res.ok()) {
    compiler_failed(r, res, output, policy, options);
  } else if (!fs::is_regular_file(artifact, ec)) {
    r.status = CompileStatus::compile_error;
    r.sub_kind = CompileErrorKind::other;
    r.summary = "The compiler reported success but produced no " + std::string(kArtifactName) + ".";
  } else {
    check_artifact(r, artifact, policy);
  }
}

}  // namespace

CompileResult compile(const Backend& backend, const std::string& source, const fs::path& workdir,
                      const CompileOptions& options) {
  if (CompileResult own; backend.build(source, workdir, options, &own)) return own;
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  auto finish = [&]() -> CompileResult {
    r.wall = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    return std::move(r);
  };

  std::error_code ec;
  fs::create_directories(workdir, ec);
  if (ec) throw std::runtime_error(workdir.string() + ": cannot create work directory: " + ec.message());
  const std::string src_name = backend.source_file_name();
  r.source_path = workdir / src_name;
  write_file(r.source_path, source);
  const fs::path artifact = workdir / kArtifactName;
  fs::remove(artifact, ec);  // never report a stale artifact

  const auto compiler = backend.find_compiler(options);
  r.argv = backend.compile_argv(src_name, kArtifactName, options);
  if (!compiler) {
    r.status = CompileStatus::toolchain_missing;
    r.summary = "The " + backend.name() + " compiler (" + r.argv.front() + ") was not found.";
    return finish();
  }
  r.compiler_version = sandbox::compiler_version(r.argv.front());
  const SymbolPolicy policy{options.allow_cublas, options.allow_cudnn};

  std::optional<sandbox::CompileCache> cache;
  if (!options.cache_dir.empty()) {
    cache.emplace(options.cache_dir);
    r.cache_key = cache_key(backend, source, src_name, r, policy, options);
    if (auto entry = cache->lookup(r.cache_key)) {
      r.cached = true;
      r.log = entry->log;
      fs::copy_file(entry->artifact, artifact, fs::copy_options::overwrite_existing, ec);
      if (ec)
        throw std::runtime_error(artifact.string() + ": cannot copy from the compile cache: " + ec.message());
      r.diagnostics = parse_diagnostics(r.log, source, src_name, backend.diagnostic_dialects());
      check_artifact(r, artifact, policy);  // a hit passes the same checks as a fresh build
      return finish();
    }
  }
  run_compiler(r, backend, source, src_name, workdir, artifact, policy, options);
  // A failed store costs only a later rebuild; the compile itself succeeded.
  if (r.status == CompileStatus::ok && cache) cache->store(r.cache_key, artifact, r.log, nullptr);
  return finish();
}

}  // namespace kforge::backends
