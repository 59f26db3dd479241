// kforge/sandbox/confine.hpp — confinement of the calling process: the candidate host's
// side of the trust boundary (docs/judge.md).
//
// confine_self() is called once by a process that is about to run untrusted code, after it
// has opened everything it legitimately needs (its channel, the shared tensors, the GPU
// device nodes) and before it loads the candidate. It is irreversible for the process and
// every thread it starts afterwards: no new privileges, all capabilities dropped (so being
// root gains nothing: no ptrace of other processes, no /proc/<pid>/mem of a non-dumpable
// judge), rlimits, and a seccomp-bpf filter built with libseccomp. Thread-safety: call it
// from the main thread while the process runs no untrusted code; the filter applies to all
// threads (SECCOMP_FILTER_FLAG_TSYNC).
//
// The filter is a deny-list aimed at the threat model (an adversarial kernel that wants to
// be credited without earning it), not at every syscall: the CUDA driver's own needs
// (ioctl, mmap, threads, read-only opens) stay open, while everything that reaches outside
// the host is stopped — new processes and exec, sockets, ptrace and cross-process memory,
// signals to other processes, opens that create or truncate, file-system changes,
// System V / POSIX IPC that could carry state to a later candidate, io_uring (which
// bypasses seccomp), namespaces, BPF and perf. A stopped call raises SIGSYS in the caller
// (SECCOMP_RET_TRAP); the host's handler reports the syscall number on its channel and
// exits with kViolationExit. Writes to files are confined by Landlock (path-based, which a
// seccomp filter cannot be): nothing is writable but the paths the policy names (the GPU
// device nodes); the candidate's own descriptors (its channel, its log) stay usable.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kforge::sandbox {

/// Exit status of a candidate host that hit the seccomp filter.
inline constexpr int kViolationExit = 101;

struct ConfinePolicy {
  /// RLIMIT_FSIZE: caps the host's log (a memfd) and, on a GPU, each file of Triton's cache in
  /// the scratch directory (a large kernel's cubin and IR pass 1 MiB: issue 22 measured SIGXFSZ).
  long max_file_bytes = 64L << 20;
  long max_open_files = 1024;      ///< RLIMIT_NOFILE
  bool seccomp = true;             ///< false only for tests of the other layers
  /// Glob patterns of files that may still be opened for writing (Landlock), e.g. the GPU's
  /// device nodes "/dev/nvidia*". Where the kernel has no Landlock, every open for writing
  /// is stopped by the seccomp filter instead (a cpu host needs none).
  std::vector<std::string> writable_paths;
  /// Directories beneath which files may be created, written, renamed and removed (Landlock);
  /// only the profile mode of the candidate host has one (Nsight Compute's injected library
  /// keeps its lock file there). With one, creating opens and mkdir/unlink/rename are left to
  /// Landlock, and permission changes answer EPERM. Needs Landlock: confine_self fails
  /// without it.
  std::vector<std::string> scratch_dirs;
  /// Leaves the socket calls open: only the profile mode, whose injected Nsight Compute library
  /// talks to its front-end over a socket. Nothing of kforge listens on one, and the profile
  /// decides no verdict.
  bool allow_sockets = false;
  /// Where the caller is root: the user and group it becomes before dropping its capabilities
  /// (65534, "nobody" on Debian and Ubuntu), so that no file or process of root's is its
  /// own. 0: stay. Scratch directories are handed to it first.
  unsigned run_as_uid = 0;
  /// Where not empty, the only paths (glob patterns, everything beneath each) that may be read
  /// or listed (Landlock); the writable paths and scratch directories stay readable. Without
  /// Landlock confine_self then fails. system_read_paths() gives the usual set.
  std::vector<std::string> readable_paths;
  /// Address ranges [first, second) no memory call may touch after confinement (mprotect,
  /// pkey_mprotect, munmap, madvise, mmap, remap_file_pages whose address lies inside are
  /// trapped; with any range, mremap answers ENOMEM): the host's own executable image (RELRO
  /// makes its relocations read-only; this keeps them so) and the unmapped page below it, so
  /// that no mapping can grow into it.
  std::vector<std::pair<unsigned long, unsigned long>> protected_ranges;
};

/// What a confined host needs to read: the system's directories (/usr, /lib*, /bin, /sbin,
/// /etc, /opt, /dev, /sys, /proc) and the directories of every file mapped in the process now
/// and of LD_LIBRARY_PATH (libraries found through RPATH, a venv or CUDA_HOME). Not /tmp,
/// /home, /root, /srv or the working directory: other candidates' files, the kernels folder and
/// the run's records stay out of reach.
std::vector<std::string> system_read_paths();

/// The absolute entries of a colon-separated list ("/a:rel:/b" -> {"/a", "/b"}); none for null.
std::vector<std::string> absolute_paths_in(const char* list);

/// The host's own executable image as a protected range (ConfinePolicy::protected_ranges): from
/// the page below its first (where that page is unmapped) to the end of its last, read from
/// /proc/self/maps; {0, 0} when it cannot be read. An mprotect that starts below the range cannot
/// reach into it: the page between is unmapped, no call may map it, and mprotect fails on a
/// range with a hole.
std::pair<unsigned long, unsigned long> own_image_range();

/// Confines the calling process (see the header comment). Returns "" on success, else what
/// failed ("seccomp_load: Invalid argument"); the caller must then not run the candidate.
std::string confine_self(const ConfinePolicy& policy);

/// The name of a syscall number on this architecture ("execve"), or "syscall <nr>".
std::string syscall_name(int nr);

/// Whether this build has libseccomp (false: confine_self fails with a clear message).
bool seccomp_available();

}  // namespace kforge::sandbox
