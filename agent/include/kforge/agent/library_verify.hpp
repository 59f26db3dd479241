// kforge/agent/library_verify.hpp — `kforge library verify DIR` (issues 24, 38 §2.2): re-checks
// every kernel of an exported backend package (`kforge library export RUN --as-backend DIR`) here,
// now, and records which artifacts the package may load.
//
// Each operator's kernel file is read once and those bytes are judged as they are: a shared
// object (cpu, cuda) is not rebuilt from its source but passes the symbol check and the judge's
// check (and bench) through kforge-host, on the task built from the package's cases
// (kforge_backend/cases/operators.txt); a Triton module is judged by `kforge eval` with the
// operator's adapter appended, as in the run. The verdict is compared with what the manifest
// recorded: the kernel's SHA-256, the judge's device, GPUs and toolchain (torch, Triton,
// LibTorch), and the package's loader (__init__.py) must be byte for byte kforge's template.
// Every operator gets a status in the manifest (`verify`: ok, stale_environment — passes here,
// recorded on another GPU or toolchain —, changed — the kernel file or the loader is not the one
// exported —, failing — it does not pass now —, with the reasons, the outcome and the time).
//
// The package's loader trusts none of that manifest: for every kernel that passes here under
// kforge's loader, verify writes a record `<records>/<sha256 of the judged bytes>.<operator>.json` (mode
// 0444; operator, entry, kind, status, environment, time, the cases' SHA-256) outside the
// package, and removes the record of a kernel that does not pass. <records> is --records, else
// $KFORGE_VERIFIED_DIR, else $XDG_DATA_HOME/kforge/verified, else ~/.local/share/kforge/verified
// (docs/library.md). One call at a time per package directory; not thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::agent {

struct VerifyCommand {
  std::filesystem::path dir;      ///< the package directory (holding kforge_backend/)
  std::string device;             ///< "" = the manifest's device
  bool bench = false;             ///< time the kernels again (a GPU)
  int reps = 100;
  std::filesystem::path records;  ///< "" = the default record directory (above)
};

/// Prints one row per operator and a summary. 0 when every kernel is ok or only
/// stale_environment; 1 when one is changed or failing; 2 for a directory that is not a package
/// (or one without its cases file) or a record directory that cannot be created; 3 when the
/// runner does not start.
int run_library_verify(const VerifyCommand& cmd);

}  // namespace kforge::agent
