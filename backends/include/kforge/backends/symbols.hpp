// kforge/backends/symbols.hpp — the post-link check that a candidate uses no forbidden API
// (DESIGN.md §5: a candidate cannot fall back to PyTorch, load code, start processes or talk
// to the network).
//
// check_symbols() lists the artifact's undefined dynamic symbols (`nm -D --undefined-only`)
// and its NEEDED libraries (`readelf -d`), both run through sandbox::run, and reports each
// one that breaks a rule: PyTorch (ATen/c10/torch namespaces), Python (Py*, _Py*), dynamic
// loading (dlopen, dlsym, ...), processes (fork, exec*, system, posix_spawn*, kill, ptrace,
// syscall, ...), sockets and name resolution (socket, connect, send*, recv*, getaddrinfo,
// ...), and the libraries libtorch*, libc10*, libpython*, and libcublas*/libcudnn* unless the
// policy allows them. forbidden_symbol_rule / forbidden_library_rule are the pure rules, usable
// on linker "undefined reference" messages too. Everything here is thread-safe; results are
// values.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::backends {

struct SymbolPolicy {
  bool allow_cublas = false;  ///< cublas*/cublasLt* symbols and libcublas*
  bool allow_cudnn = false;   ///< cudnn* symbols and libcudnn*
};

/// One forbidden symbol or library found in an artifact.
struct ForbiddenUse {
  std::string name;         ///< as listed (version suffix removed), e.g. "dlopen", "_ZN2at3fooEv"
  std::string demangled;    ///< C++ demangling when `name` is mangled, else == name
  std::string rule;         ///< the rule broken: "torch", "python", "dynamic_loading",
                            ///< "process", "network", "cublas", "cudnn"
  bool is_library = false;  ///< a NEEDED library rather than a symbol
};

struct SymbolReport {
  bool tools_ok = false;  ///< nm and readelf ran; when false, `error` says why
  std::string error;
  std::vector<std::string> undefined;  ///< undefined dynamic symbols (names, no version)
  std::vector<std::string> needed;     ///< NEEDED sonames
  std::vector<ForbiddenUse> forbidden;

  bool clean() const { return tools_ok && forbidden.empty(); }
};

/// The rule a symbol name breaks, or std::nullopt when it is allowed. Accepts a mangled name
/// ("_ZN2at3fooEv"), a C name ("dlopen"), either with an "@VERSION" suffix, or a demangled
/// C++ name as the linker prints it ("at::foo()").
std::optional<std::string> forbidden_symbol_rule(std::string_view symbol, const SymbolPolicy& policy = {});

/// The rule a library soname ("libtorch_cpu.so", "libpython3.11.so.1.0") breaks, or nullopt.
std::optional<std::string> forbidden_library_rule(std::string_view soname, const SymbolPolicy& policy = {});

/// C++ demangling via abi::__cxa_demangle; the input unchanged when it is not a mangled name.
std::string demangle(std::string_view symbol);

/// Inspects a built shared object. Never throws for a bad artifact: a missing tool or an
/// unreadable file gives tools_ok == false with the reason.
SymbolReport check_symbols(const std::filesystem::path& shared_object, const SymbolPolicy& policy = {});

/// One line per forbidden use, for feedback: "dlopen (dynamic_loading)".
std::string describe_forbidden(const std::vector<ForbiddenUse>& uses);

}  // namespace kforge::backends
