// kforge/sandbox/sealed_copy.hpp — a descriptor's bytes copied into a memfd sealed against every
// change: how an artifact reaches a candidate host (docs/judge.md) without a path, so that the
// host depends on no directory's mode or owner and loads exactly the bytes that were copied.
//
// One function, no shared state; thread-safe. The caller owns the returned descriptor. Expected
// failures (a read or write error, a kernel without sealing) come back as a value naming the
// failed step and its errno; nothing throws.
#pragma once

namespace kforge::sandbox {

/// The result of sealed_copy: a descriptor, or the step that failed and its errno.
struct SealedCopy {
  int fd = -1;            ///< the sealed memfd (close-on-exec), owned by the caller; -1 on failure
  int error = 0;          ///< errno of the failed step; 0 on success
  const char* step = "";  ///< "memfd_create", "read", "write" or "seal" on failure; "" on success
  explicit operator bool() const { return fd >= 0; }
};

/// Copies the bytes of `src` from its current offset to its end into a new memfd named `name`
/// (MFD_ALLOW_SEALING | MFD_CLOEXEC, and MFD_EXEC where the kernel knows it, so that
/// vm.memfd_noexec cannot refuse an executable mapping), then adds F_SEAL_WRITE, F_SEAL_GROW,
/// F_SEAL_SHRINK and F_SEAL_SEAL. Reads and writes interrupted by a signal are retried and
/// partial writes completed. `src` is left open (its offset at its end on success).
SealedCopy sealed_copy(int src, const char* name = "kforge-artifact");

}  // namespace kforge::sandbox
