// backends/host/host.hpp — internals of kforge-host shared by its two modes (not a public
// header): the judged mode (host_main.cpp: one candidate, driven over its channel by the
// judge) and the profile mode (profile_mode.cpp: one candidate call under Nsight Compute).
// Single-threaded; everything here runs on the host's main thread.
#pragma once

#include <signal.h>

#include <string>

#include "kforge/kernel_abi.h"

namespace kforge::host {

using KfForward = int (*)(const kf_tensor*, int, kf_tensor*, int, void*);

/// The channel to the judge.
inline constexpr int kChannel = 3;

/// Bytes of one element of a kf_dtype.
int elem_size(int dtype);

/// SIGSYS handler: writes "violation <nr>[ <path>]" to fd 3 and exits with kViolationExit.
void on_sigsys(int, siginfo_t* si, void* ctx);

/// The user a confined host becomes where it starts as root ("nobody" on Debian and Ubuntu).
inline constexpr unsigned kUnprivilegedUid = 65534;

/// Whether a root host on `device` (-1: cpu) can give up root and still use its GPU: every
/// /dev/nvidia* character device is open to every user (the driver's default). /dev/nvidia-caps
/// grants MIG instances only (NVIDIA's MIG user guide, "Device Nodes and Capabilities"): it
/// counts only where a GPU instance exists (/proc/driver/nvidia/capabilities/gpu*/mig/gi*).
/// The Triton host and its build helper ask the same question, so they are the same user.
bool runs_unprivileged_on(int device);

/// Installs on_sigsys and confines the process (kforge/sandbox/confine.hpp): the GPU's device
/// nodes stay writable when device >= 0; files may be created beneath `scratch` when it is not
/// empty (handed to the new user); the socket calls stay open when allow_sockets; a root host
/// becomes kUnprivilegedUid where runs_unprivileged_on(device), except the profile mode
/// (allow_sockets: Nsight Compute's lock in its scratch directory); with own_image, the executable's own
/// image is a protected range (no memory call may make it writable or replace it); reads are limited to the
/// system's directories and the mapped libraries' (not in the profile mode): the artifact
/// arrives as a descriptor, never a path. "" on success, else what failed.
std::string confine_host(int device, const std::string& scratch, bool allow_sockets, bool own_image);

/// Installs on_sigsys, confines the process (kforge/sandbox/confine.hpp; the GPU's device nodes
/// stay writable when device >= 0; `scratch`, when not empty, is the profile mode's scratch
/// directory), dlopens the artifact open on `artifact_fd` (the judge's sealed memfd, through
/// /proc/self/fd: no path, so the run directory's mode never matters) and finds kf_forward.
/// "" on success, else "<kind> <text>" with kind `confine` or `infra` (the confinement, or
/// opening or mapping the descriptor executable, failed before any of the candidate's code
/// ran: kforge's or the environment's failure), `load` (dlopen failed: the candidate's
/// constructors or symbols) or `entry_point`.
std::string confine_and_load(int artifact_fd, int device, const std::string& scratch, KfForward* fn);

/// The same for a file (the profile mode, which decides nothing): opened before confinement.
std::string confine_and_load(const std::string& artifact, int device, const std::string& scratch,
                             KfForward* fn);

/// The profile mode: `kforge-host --profile <artifact> <device> <tensor file>`. Reads the
/// tensors the judge wrote (format below), confines itself as the judged mode does except for
/// one scratch directory, $KFORGE_PROFILE_SCRATCH when set (where Nsight Compute's injected
/// library keeps its lock file: ConfinePolicy::scratch_dirs),
/// calls kf_forward once untimed (lazy loading, caches), then once between
/// cudaProfilerStart/Stop (the call Nsight Compute profiles with --profile-from-start off),
/// and exits: 0 when both calls returned 0 without a CUDA error, 1 otherwise (the reason on
/// stderr), 2 on a bad tensor file. Nothing it does or prints decides a verdict.
///
/// Tensor file (written by kforge-runner's `profile_setup`): text lines
///   kforge-tensors 1
///   in <kf_dtype> <ndim> <size>...     one per argument, in the C ABI's order
///   out <kf_dtype> <ndim> <size>...    one per output
///   data
/// followed by the raw contiguous bytes of every `in` tensor, in order.
int profile_main(const std::string& artifact, int device, const std::string& tensor_file);

}  // namespace kforge::host
