// kforge/benchmarks/backend_export.hpp — a run's ATen-operator kernels as an installable PyTorch
// backend package (`kforge library export RUN --as-backend DIR`, issue 24 §2).
//
// export_backend reads a run directory (as export_library does: attempts.jsonl, the attempt
// files, manifest.json) and writes DIR/pyproject.toml and DIR/kforge_backend/: __init__.py (from
// benchmarks/backend/__init__.py.in: enable(), disable(), enabled(), registered(); kernels
// registered through torch.library for the manifest's dispatch key, unregistered operators fall
// through to PyTorch), kernels/<operator>.py (the candidate's own module, kforge's case adapter
// cut off) and manifest.json (per operator: kernel file, SHA-256 of it, the attempt's source
// hash, speedup, the attempt's record as the verification evidence; the run's device, dispatch
// key and judge hello as GPU and toolchain; per operator `generalises` and `generalisation`, the
// verdict on unseen shapes from <run>/generalisation.json). Passing operator kernels of the
// triton backend (kernels/<op>.py) and of the cpu and cuda backends (kernels/<op>.so: the shared
// object the judge passed, called through ctypes; its source beside it) are exported, and of
// those only the kernels shown to generalise unless include_non_generalising. A watermark build replaces
// every kernel with a Triton kernel that writes a constant (BackendBench's idea): a model's outputs then show
// whether its calls really route through the package. Thread-safe on distinct directories.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// What a package's kernel is (its manifest entry's "kind", a package-format field read by the
/// package's loader and by `kforge library verify`): a shared object exporting kf_forward, or a
/// Python module.
enum class PackageKernelKind { shared_object, python_module };

/// "shared_object" / "python_module".
const char* to_string(PackageKernelKind kind);

/// A manifest's "kind": "shared_object", "python_module", or "triton" (what packages exported
/// before the field named the artifact's kind wrote for a Python module); nullopt otherwise.
std::optional<PackageKernelKind> parse_package_kernel_kind(std::string_view text);

/// A backend whose passing kernels a package may hold, as the registry describes it (this
/// library names no backend): what its build produces and where its kernels run.
struct ExportedBackend {
  PackageKernelKind kind = PackageKernelKind::python_module;  ///< Backend::artifact_kind
  std::string device_type;                                    ///< Backend::device_type: "cpu", "cuda"
};

struct BackendExportOptions {
  std::optional<double> watermark;  ///< set: every kernel writes this value instead of computing
  /// Also export kernels not shown to generalise to unseen shapes (generalisation.json says no,
  /// or could not judge them, or has no verdict for them); by default only those that do.
  bool include_non_generalising = false;
  /// The backends by name (filled by the caller from the registry): a shared object is exported
  /// as kernels/<op>.so (called through ctypes, its source beside it), a Python module as
  /// kernels/<op>.py; each manifest entry names its kind, backend and device type. A record of
  /// a backend not listed is skipped, with the reason.
  std::map<std::string, ExportedBackend> backends;
};

struct BackendExport {
  std::filesystem::path dir;
  int exported = 0;
  std::vector<std::string> skipped;  ///< "<task>: <why>"
};

/// The watermark kernel for `op`: an `<op>_kernel_impl` that finds the result's shape and dtype
/// on the meta device and fills it with `value` in a Triton kernel.
std::string watermark_kernel(const std::string& op, double value);

/// Writes the package for the run's passing operator kernels into `out_dir` (replacing an
/// earlier export there). Throws std::runtime_error on a file-system failure or when
/// benchmarks/backend/__init__.py.in is missing from KFORGE_HOME.
BackendExport export_backend(const std::filesystem::path& run_dir, const std::filesystem::path& out_dir,
                             const BackendExportOptions& options = {});

}  // namespace kforge
