// kforge/agent/library_verify.hpp — `kforge library verify DIR` (issue 24): re-checks every kernel
// of an exported backend package (`kforge library export RUN --as-backend DIR`) here, now.
//
// Each operator's kernel file is judged again by `kforge eval` (the triton backend, the device
// given or the manifest's) on the cases the package carries (kforge_backend/cases/operators.txt), and
// compared with what the manifest recorded: the kernel's SHA-256, the judge's device, GPUs and
// toolchain (torch, Triton, LibTorch). Every operator gets a status in the manifest
// (`verify`: ok, stale_environment — passes here, recorded on another GPU or toolchain —,
// changed — the kernel file is not the one the manifest hashed —, failing — it does not pass
// now —, with the reasons, the outcome and the time); the package's enable() skips changed and
// failing kernels. One call at a time per package directory; not thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::agent {

struct VerifyCommand {
  std::filesystem::path dir;  ///< the package directory (holding kforge_backend/)
  std::string device;         ///< "" = the manifest's device
  bool bench = false;         ///< time the kernels again (a GPU)
  int reps = 100;
};

/// Prints one row per operator and a summary. 0 when every kernel is ok or only
/// stale_environment; 1 when one is changed or failing; 2 for a directory that is not a package
/// (or one without its cases file); the eval's own exit status when it could not judge.
int run_library_verify(const VerifyCommand& cmd);

}  // namespace kforge::agent
