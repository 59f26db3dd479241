#include "kforge/backends/symbols.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace {

std::string_view strip_version(std::string_view s) {
  const auto at = s.find('@');
  return at == std::string_view::npos ? s : s.substr(0, at);
}

bool in(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool has_prefix_in(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes)
    if (s.substr(0, p.size()) == p) return true;
  return false;
}

/// A namespace `ns::` at a name boundary in a demangled name ("at::foo()", "f(at::Tensor)",
/// "std::vector<c10::IValue>"), but not "foo::at(...)" or "what::x".
bool has_namespace(std::string_view demangled, std::string_view ns) {
  const std::string needle = std::string(ns) + "::";
  std::size_t pos = 0;
  while ((pos = demangled.find(needle, pos)) != std::string_view::npos) {
    const bool boundary = pos == 0 || !(std::isalnum(static_cast<unsigned char>(demangled[pos - 1])) ||
                                        demangled[pos - 1] == '_' || demangled[pos - 1] == ':');
    if (boundary) return true;
    pos += needle.size();
  }
  return false;
}

/// Itanium-mangled source name `<len><id>` (e.g. "2at") not preceded by another digit.
bool has_mangled_name(std::string_view mangled, std::string_view len_id) {
  std::size_t pos = 0;
  while ((pos = mangled.find(len_id, pos)) != std::string_view::npos) {
    if (pos == 0 || !std::isdigit(static_cast<unsigned char>(mangled[pos - 1]))) return true;
    ++pos;
  }
  return false;
}

std::optional<std::string> c_name_rule(std::string_view n, const SymbolPolicy& policy) {
  // Python C API.
  if (n.size() > 2 && n.substr(0, 2) == "Py" &&
      (std::isupper(static_cast<unsigned char>(n[2])) || n[2] == '_'))
    return "python";
  if (n.substr(0, 3) == "_Py") return "python";
  // Dynamic loading.
  if (in(n, {"dlopen", "dlsym", "dlmopen", "dlvsym", "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym",
             "dl_iterate_phdr", "dladdr", "dladdr1", "dlinfo", "_dl_sym", "_dl_open"}))
    return "dynamic_loading";
  // Processes.
  if (in(n, {"fork", "vfork", "_Fork", "__libc_fork", "clone", "clone3", "__clone", "execve", "execveat",
             "fexecve", "system", "popen", "kill", "killpg", "tgkill", "tkill", "ptrace", "syscall", "daemon",
             "pidfd_open", "pidfd_send_signal",
             // glibc's aliases and the rest of the family (a first filter only: the candidate host's
             // seccomp policy is what stops process creation).
             "__fork", "__vfork", "__libc_vfork", "__clone2", "__clone3", "__libc_system", "_IO_popen",
             "_IO_proc_open", "forkpty", "openpty", "login_tty", "rexec", "rexec_af", "rcmd", "rcmd_af",
             "rresvport", "ruserok", "process_vm_readv", "process_vm_writev", "__syscall", "sigqueue",
             "pthread_kill", "prctl", "unshare", "setns", "personality"}) ||
      has_prefix_in(n, {"execv", "execl", "posix_spawn", "__execv", "__execl", "__posix_spawn"}))
    return "process";
  // Sockets and name resolution.
  if (in(n, {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo",
             "getnameinfo", "gethostbyaddr", "shutdown", "getsockopt", "setsockopt"}) ||
      has_prefix_in(n, {"gethostbyname", "send", "recv"}))
    return "network";
  if (!policy.allow_cublas && n.substr(0, 6) == "cublas") return "cublas";
  if (!policy.allow_cudnn && n.substr(0, 5) == "cudnn") return "cudnn";
  return std::nullopt;
}

}  // namespace

std::string demangle(std::string_view symbol) {
  const std::string s(strip_version(symbol));
  if (s.size() < 3 || s.compare(0, 2, "_Z") != 0) return s;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status),
                                           std::free);
  if (status != 0 || !d) return s;
  return std::string(d.get());
}

std::optional<std::string> forbidden_symbol_rule(std::string_view symbol, const SymbolPolicy& policy) {
  const std::string_view name = strip_version(symbol);
  if (name.empty()) return std::nullopt;
  if (name.substr(0, 2) == "_Z") {
    const std::string d = demangle(name);
    if (d != name) {
      for (auto ns : {"at", "c10", "torch", "caffe2"})
        if (has_namespace(d, ns)) return "torch";
      if (has_namespace(d, "pybind11")) return "python";
      return std::nullopt;
    }
    // Not demangleable: fall back to the mangled source names.
    for (auto id : {"2at", "3c10", "5torch", "6caffe2"})
      if (has_mangled_name(name, id)) return "torch";
    if (has_mangled_name(name, "8pybind11")) return "python";
    return std::nullopt;
  }
  // A demangled C++ name, as the linker prints it ("at::foo()", "helper(float*)").
  if (name.find("::") != std::string_view::npos || name.find('(') != std::string_view::npos) {
    for (auto ns : {"at", "c10", "torch", "caffe2"})
      if (has_namespace(name, ns)) return "torch";
    if (has_namespace(name, "pybind11")) return "python";
    const auto paren = name.find('(');
    if (paren != std::string_view::npos && name.find("::") == std::string_view::npos)
      return c_name_rule(name.substr(0, paren), policy);  // "dlopen(...)" from a C++ caller
    return std::nullopt;
  }
  return c_name_rule(name, policy);
}

std::optional<std::string> forbidden_library_rule(std::string_view soname, const SymbolPolicy& policy) {
  const std::string base(
      soname.substr(soname.find_last_of('/') == std::string_view::npos ? 0 : soname.find_last_of('/') + 1));
  if (has_prefix_in(base, {"libtorch", "libc10", "libcaffe2", "libshm"})) return "torch";
  if (has_prefix_in(base, {"libpython"})) return "python";
  if (!policy.allow_cublas && has_prefix_in(base, {"libcublas"})) return "cublas";
  if (!policy.allow_cudnn && has_prefix_in(base, {"libcudnn"})) return "cudnn";
  return std::nullopt;
}

SymbolReport check_symbols(const std::filesystem::path& so, const SymbolPolicy& policy) {
  SymbolReport r;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(so, ec)) {
    r.error = so.string() + ": no such artifact";
    return r;
  }
  auto run_tool = [&](std::vector<std::string> argv, std::string* out) -> bool {
    sandbox::Spec spec;
    spec.argv = std::move(argv);
    spec.limits.wall = std::chrono::milliseconds(30'000);
    spec.env_set["LC_ALL"] = "C";
    const auto res = sandbox::run(spec);
    if (res.status == sandbox::Status::failed_to_start) {
      r.error = spec.argv[0] + ": cannot run: " + res.error;
      return false;
    }
    if (!res.ok() && res.err.find("no symbols") == std::string::npos) {
      r.error = spec.argv[0] + " " + so.string() + " failed (" + sandbox::to_string(res.status) + ", exit " +
                std::to_string(res.exit_code) + "): " + trim(res.err);
      return false;
    }
    *out = res.out;
    return true;
  };

  std::string nm_out, readelf_out;
  if (!run_tool({"nm", "-D", "--undefined-only", so.string()}, &nm_out)) return r;
  if (!run_tool({"readelf", "-d", so.string()}, &readelf_out)) return r;
  r.tools_ok = true;

  for (const auto& line : split_lines(nm_out)) {
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.size() < 2) continue;  // "U name" or "addr U name"
    const std::string name(strip_version(tok.back()));
    r.undefined.push_back(name);
    if (auto rule = forbidden_symbol_rule(name, policy))
      r.forbidden.push_back({name, demangle(name), *rule, false});
  }
  static const std::regex kNeeded(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  for (const auto& line : split_lines(readelf_out)) {
    std::smatch m;
    if (!std::regex_search(line, m, kNeeded)) continue;
    const std::string lib = m[1].str();
    r.needed.push_back(lib);
    if (auto rule = forbidden_library_rule(lib, policy)) r.forbidden.push_back({lib, lib, *rule, true});
  }
  return r;
}

std::string describe_forbidden(const std::vector<ForbiddenUse>& uses) {
  std::string out;
  for (const auto& u : uses) {
    out += u.is_library ? "library " : "";
    out += u.demangled.empty() ? u.name : u.demangled;
    out += " (" + u.rule + ")\n";
  }
  return out;
}

}  // namespace kforge::backends
