// signals_owner (cpu): a route to signal another process without kill(): make it the owner of
// the host's channel (fcntl F_SETOWN) so that the kernel sends it SIGIO when data arrives. The
// seccomp filter traps F_SETOWN, F_SETSIG and F_SETOWN_EX (and the FIOSETOWN / SIOCSPGRP
// ioctls). Expected: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

// The symbol check refuses open/read/write/... (a kernel imports no file-system, identity or
// environment query: issue 38 §2.3), so this kernel reaches the host's runtime walls (seccomp,
// Landlock, no capabilities) through raw system calls, as an attacker past the check would.
#include <fcntl.h>
#include <sys/syscall.h>
[[maybe_unused]] static long kf_raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0) {
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret < 0 && ret > -4096 ? -1 : ret;
}
[[maybe_unused]] static int kf_open(const char* p, int flags, int mode = 0) {
  return static_cast<int>(kf_raw(SYS_openat, AT_FDCWD, reinterpret_cast<long>(p), flags, mode));
}
[[maybe_unused]] static long kf_read(int fd, void* b, unsigned long n) { return kf_raw(SYS_read, fd, reinterpret_cast<long>(b), n); }
[[maybe_unused]] static long kf_write(int fd, const void* b, unsigned long n) {
  return kf_raw(SYS_write, fd, reinterpret_cast<long>(b), n);
}
[[maybe_unused]] static long kf_pread(int fd, void* b, unsigned long n, long off) {
  return kf_raw(SYS_pread64, fd, reinterpret_cast<long>(b), n, off);
}
[[maybe_unused]] static int kf_close(int fd) { return static_cast<int>(kf_raw(SYS_close, fd)); }
[[maybe_unused]] static int kf_getppid() { return static_cast<int>(kf_raw(SYS_getppid)); }
[[maybe_unused]] static int kf_geteuid() { return static_cast<int>(kf_raw(SYS_geteuid)); }
[[maybe_unused]] static int kf_fcntl(int fd, int cmd, long arg = 0) { return static_cast<int>(kf_raw(SYS_fcntl, fd, cmd, arg)); }
[[maybe_unused]] static int kf_flock(int fd, int op) { return static_cast<int>(kf_raw(SYS_flock, fd, op)); }

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (kf_fcntl(3, F_SETOWN, static_cast<int>(kf_getppid())) == 0) return 9;  // the judge would get SIGIO
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0, n = kf_numel(&outputs[0]); i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
