// kforge/backends/symbols.hpp — the post-link check that a candidate imports only what a kernel
// may use (docs/judge.md, "Candidate confinement and scans"; issue 38 §2.3).
//
// check_symbols() lists the artifact's undefined dynamic symbols (`nm -D --undefined-only`)
// and its NEEDED libraries (`readelf -d`), both run through sandbox::run, and reports each
// one that breaks a rule. The symbol rule is an allow-list: a kernel may import memory,
// string, number, formatted-output (stdout/stderr), thread, CPU-count and clock functions of
// the C library, libm, libgcc's arithmetic helpers, the C++ standard library (std::,
// __gnu_cxx::, __cxxabiv1::, operator new/delete) but for its file streams, std::filesystem
// and named locales, OpenMP (GOMP_*, omp_*, __kmpc_*) and the CUDA runtime (cuda*, __cuda*);
// anything else is "unlisted". Named rules say why for what a kernel must never reach:
// PyTorch (ATen/c10/torch namespaces), Python (Py*, _Py*), dynamic loading, processes,
// sockets, the environment (getenv, environ, getauxval, ...), identity (getuid, getpid,
// uname, ...) and the file system (open, stat, opendir, getcwd, read/write, ...): the
// candidate host's environment, user and file system differ from the user's process, and a
// kernel that could query them could behave only while judged. Libraries: libtorch*,
// libc10*, libpython*, and libcublas*/libcudnn* unless the policy allows them. A raw
// `syscall` instruction imports nothing; the candidate host's seccomp filter and Landlock
// rules are what confine it. forbidden_symbol_rule / forbidden_library_rule are the pure
// rules, usable on linker "undefined reference" messages too (where only the named rules
// count). Everything here is thread-safe; results are values.
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
                            ///< "process", "network", "environment", "identity",
                            ///< "filesystem", "cublas", "cudnn", or "unlisted" (not on the
                            ///< allow-list)
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
/// C++ name as the linker prints it ("at::foo()"; only the named rules apply to this form).
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
