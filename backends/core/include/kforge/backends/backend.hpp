// kforge/backends/backend.hpp — what a backend is (docs/backends.md) and the registry that holds
// them.
//
// A Backend describes one target platform: its name ("cpu", "cuda"), the file name its
// candidate source is written to, the code-fence languages it accepts in an LLM reply, how
// the candidate is extracted from the reply, how its toolchain is found and invoked, and which
// libraries the symbol check may let through. Backends are immutable once registered and live
// until the process exits; every const member function is thread-safe. The registry is
// guarded by a mutex: register_backend / find_backend may be called from any thread. The
// built-in backends, one folder each (backends/cpu, backends/cuda, backends/triton), are
// registered on first use of the registry: each is one name in backends/CMakeLists.txt's
// KFORGE_BACKENDS list, whose folder defines make_<name>_backend(). A backend outside the tree
// registers itself with register_backend() (MultiKernelBench's register_backend idea).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/backends/diagnostics.hpp"
#include "kforge/backends/host_kind.hpp"
#include "kforge/backends/precision.hpp"

namespace kforge::backends {

/// Knobs of one compile. The defaults are the benchmark configuration.
struct CompileOptions {
  /// CUDA target, e.g. "sm_90a". Empty: detected from the device (nvidia-smi), else sm_90a.
  std::string arch;
  /// Compiler executable (path or name looked up on PATH). Empty: the backend's default
  /// (cpu: g++; cuda: nvcc from PATH, $CUDA_HOME/bin, then /usr/local/cuda/bin).
  std::string compiler;
  /// Extra flags appended before the source file (e.g. "-DNDEBUG", "-lineinfo").
  std::vector<std::string> extra_flags;
  /// Link cuBLAS / cuDNN and let their symbols and libraries through the symbol check.
  bool allow_cublas = false;
  bool allow_cudnn = false;
  /// Directory holding kforge/kernel_abi.h. Empty: kforge_home()/backends/abi.
  std::filesystem::path abi_dir;
  /// Wall-clock limit of the compiler process.
  std::chrono::milliseconds timeout{120'000};
  /// Compile cache root. Empty: the cache is not used.
  std::filesystem::path cache_dir;
  /// Cap on the build log kept in a CompileResult (bytes; head and tail kept).
  std::size_t log_cap_bytes = 64 * 1024;
  /// Limits of the feedback summary of compiler errors.
  std::size_t summary_max_errors = 5;
  std::size_t summary_max_bytes = 4096;
};

/// Why a reply yielded no candidate.
enum class ExtractError {
  none,
  no_code_block,   ///< no fenced block in a language this backend accepts
  no_entry_point,  ///< blocks found, but none defines kf_forward
};

std::string_view to_string(ExtractError e);

/// The result of extracting a candidate from an LLM reply: a value, never thrown.
struct Extracted {
  bool ok = false;
  std::string source;    ///< the chosen block's text (ok only)
  std::string language;  ///< its fence language, lowercased ("" when untagged)
  ExtractError error = ExtractError::none;
  std::string message;          ///< format_error text for the feedback prompt (!ok only)
  std::size_t blocks_seen = 0;  ///< fenced blocks of accepted languages in the reply
};

/// One fenced code block of a Markdown reply.
struct FencedBlock {
  std::string language;  ///< first word of the info string, lowercased
  std::string body;
  bool closed = true;  ///< false when the reply ended inside the block
};

/// All fenced blocks (``` or ~~~, any indentation) in order. An unterminated last block runs
/// to the end of the text (closed = false).
std::vector<FencedBlock> fenced_blocks(std::string_view text);

/// True when `source` defines (not merely declares or calls) a function called `name`.
/// Comments and string literals are ignored.
bool defines_function(std::string_view source, std::string_view name);

/// Picks the LAST fenced block whose language is in `languages` ("" accepts untagged blocks)
/// and that defines `entry_point`.
Extracted extract_fenced(std::string_view reply, const std::vector<std::string>& languages,
                         std::string_view entry_point = "kf_forward");

/// Maps an nvidia-smi compute capability ("9.0") to an nvcc arch: "sm_90a" for 9.0 (the
/// arch-specific Hopper features), "sm_<major><minor>" otherwise. std::nullopt when the
/// text is not "<major>.<minor>".
std::optional<std::string> arch_from_compute_cap(std::string_view compute_cap);

/// The compute capability of device 0 via `nvidia-smi --query-gpu=compute_cap
/// --format=csv,noheader`, mapped with arch_from_compute_cap; std::nullopt when there is no
/// nvidia-smi or no device. Runs nvidia-smi once per process (the answer is remembered).
std::optional<std::string> detect_cuda_arch();

/// Looks `name` up like execvp would: a name with '/' is returned as is when executable;
/// otherwise each $PATH entry is tried. std::nullopt when not found.
std::optional<std::filesystem::path> find_executable(std::string_view name);

/// What the judge (or the build) said of a failed candidate, for Backend::explain_failure.
struct FailureFacts {
  Outcome outcome = Outcome::runtime_error;  ///< the build's or the judge's outcome
  std::string_view sub_kind;
  std::string_view message;      ///< the failure's text (a Python host's: its traceback)
  std::string_view source;       ///< the candidate's source
  std::string_view source_name;  ///< its file name as the host names it ("kernel.py")
  bool at_build = false;         ///< the build failed (else the check or the bench did)
};

/// A failure as the backend reads it: the outcome and sub-kind it means, TritonBench's error
/// group ("Syntax", "Attr&Type", "Name&Ref", "Run&Logic", "Other"; "" when none), and the
/// feedback text that replaces the judge's message.
struct FailureExplanation {
  Outcome outcome = Outcome::runtime_error;
  std::string sub_kind;
  std::string error_group;
  std::string message;
};

struct CompileResult;  // compile.hpp

/// What a backend's build produces: a shared object exporting kf_forward (the candidate host
/// dlopens it) or a Python module (a Python candidate host imports it).
enum class ArtifactKind { shared_object, python_module };

class Backend {
 public:
  virtual ~Backend() = default;

  /// Registry key: "cpu", "cuda", ...
  virtual std::string name() const = 0;
  /// Where the candidate's kernels run, as the runner names the device type: "cpu" or "cuda".
  /// It selects the default device, whether a GPU must be visible, and the GPU-only parts of
  /// the profile step (compile-time resources, Nsight Compute).
  virtual std::string device_type() const = 0;
  /// The device a run uses when none is given: "cpu", or "<device type>:0".
  std::string default_device() const;
  /// True when the kernels run on a GPU (device_type() != "cpu").
  bool on_gpu() const { return device_type() != "cpu"; }
  /// The code-fence language the prompts show code in ("cpp", "cuda").
  virtual std::string prompt_language() const = 0;
  /// The folder of the backend's prompt templates (system.md, output_format.md,
  /// output_format_operator.md, operator_write.md, output_format_tritonbench.md; prompts.hpp). Default: its
  /// own folder's, kforge_home()/backends/<name>/prompts.
  virtual std::filesystem::path prompts_dir() const;
  /// What compile() produces (default: a shared object).
  virtual ArtifactKind artifact_kind() const { return ArtifactKind::shared_object; }
  /// The candidate host that runs the artifact (host_kind.hpp); the runner client sends it with
  /// every check, bench and profile request. Default: kforge-host for a shared object, the
  /// Python host for a Python module.
  virtual HostKind host_kind() const {
    return artifact_kind() == ArtifactKind::python_module ? HostKind::python : HostKind::native;
  }
  /// File the candidate is written to inside the work directory: "kernel.cpp", "kernel.cu".
  virtual std::string source_file_name() const = 0;
  /// Fence languages accepted in a reply, lowercased; "" accepts an untagged fence.
  virtual std::vector<std::string> fence_languages() const = 0;

  /// Extracts the candidate from a reply (default: extract_fenced with fence_languages()).
  virtual Extracted extract(std::string_view reply_text) const;

  /// The compiler executable these options select; std::nullopt when it cannot be found
  /// (the compile is then a toolchain_missing outcome, not the candidate's fault).
  virtual std::optional<std::filesystem::path> find_compiler(const CompileOptions& options) const = 0;

  /// Target the artifact is built for, part of the compile-cache key (cuda: "sm_90a";
  /// cpu: "native:<cpu model>").
  virtual std::string target_arch(const CompileOptions& options) const = 0;

  /// Full argv of the compile: compiler, flags, -I<abi dir>, -o out, src. Paths are used as
  /// given (compile() passes names relative to the work directory, so logs and cache keys do
  /// not depend on where the work directory lives). argv[0] is the resolved compiler, or the
  /// bare default name when it cannot be found.
  virtual std::vector<std::string> compile_argv(const std::filesystem::path& src,
                                                const std::filesystem::path& out_so,
                                                const CompileOptions& options) const = 0;

  /// A build of the backend's own, for an artifact that is not a shared object: fills *out
  /// (writing the source into `workdir`) and returns true. False (the default): compile() builds
  /// a shared object with compile_argv() in the sandbox, through the compile cache, and runs
  /// the symbol check.
  virtual bool build(const std::string& /*source*/, const std::filesystem::path& /*workdir*/,
                     const CompileOptions& /*options*/, CompileResult* /*out*/) const {
    return false;
  }

  /// True when inspect_precision() looks into this backend's artifacts for math below the task's
  /// precision (precision.hpp; the cuda backend: its SASS). False (the default): such math is
  /// not detected, so what a prompt says of it must not claim so.
  virtual bool inspects_precision() const { return false; }
  /// Inspects a compiled artifact for lower-precision math (precision.hpp). A missing tool is
  /// reported in the report's `error`, never thrown. Default: an empty, uninspected report.
  virtual PrecisionReport inspect_precision(const std::filesystem::path& /*artifact*/) const { return {}; }

  /// The formats of this backend's own compiler messages, tried before the core's (g++, GNU ld,
  /// the driver) when compile() parses its log (parse_diagnostics): none for a g++ backend; the
  /// cuda backend's nvcc, ptxas and nvlink (backends/cuda/cuda_diagnostics.cpp).
  virtual std::vector<DiagnosticDialect> diagnostic_dialects() const { return {}; }

  /// What a failure of this backend's candidate means, when the backend reads its host's or
  /// its build's messages itself (the triton backend: Python's exceptions as outcomes and
  /// TritonBench's error groups, backends/triton/python_errors.hpp); std::nullopt keeps the
  /// judge's outcome and message. Called for compile_error at build and for runtime_error
  /// after the check or the bench; never for infra_error (kforge's own failure stays kforge's).
  /// Default: std::nullopt.
  virtual std::optional<FailureExplanation> explain_failure(const FailureFacts& /*facts*/) const {
    return std::nullopt;
  }

  /// Starts, without waiting, what `concurrency` builds at once will need (the triton backend:
  /// its warm scanners, triton_scan.hpp), so that their start-up overlaps the judges'. Never
  /// fails: a build starts what it lacks itself. Default: nothing.
  virtual void prewarm(int /*concurrency*/, const CompileOptions& /*options*/) const {}
};

/// The ABI include directory these options select (options.abi_dir or
/// kforge_home()/backends/abi).
std::filesystem::path abi_include_dir(const CompileOptions& options);

/// Registers a backend. Throws std::invalid_argument when the name is empty or already
/// registered (a broken configuration, not an attempt's outcome).
void register_backend(std::shared_ptr<const Backend> backend);

/// The backend registered under `name`; nullptr when there is none.
const Backend* find_backend(std::string_view name);

/// Like find_backend, but throws std::invalid_argument naming the known backends.
const Backend& get_backend(std::string_view name);

/// Registered names, sorted.
std::vector<std::string> backend_names();

/// The interpreter with torch that kforge's own Python tools run under (operator schemas, the
/// parquet export): the compiler of the first registered backend, by name, whose artifacts are
/// Python modules (triton: the venv's python); std::nullopt when there is none or it cannot be
/// found. Callers let $KFORGE_PYTHON override it.
std::optional<std::filesystem::path> torch_python();

}  // namespace kforge::backends
