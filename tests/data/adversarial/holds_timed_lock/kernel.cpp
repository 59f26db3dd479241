// holds_timed_lock (cpu): tries to take the judge's per-device lock for timed work
// (backends/timed_lock.hpp), which would stall every other runner's bench on the device, or
// let a candidate time itself while others are timed. The lock directory is the judge's
// (/run/kforge-locks as root, /tmp/kforge-locks-<uid> otherwise, 0700), outside what Landlock
// lets the host read, and the runner has created it and the cpu lock before this host loads.
// Expected: pass (return 9, a runtime_error, would mean it could open or lock it).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "kforge/kernel_abi.h"

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

namespace {
bool reaches_lock() {
  char user_dir[64];
  std::snprintf(user_dir, sizeof user_dir, "/tmp/kforge-locks-%u", static_cast<unsigned>(kf_geteuid()));
  char user_lock[80];
  std::snprintf(user_lock, sizeof user_lock, "%s/cpu.lock", user_dir);
  for (const char* path :
       {"/run/kforge-locks/cpu.lock", "/tmp/kforge-locks-0/cpu.lock", static_cast<const char*>(user_lock),
        "/run/kforge-locks", "/tmp/kforge-locks-0", static_cast<const char*>(user_dir)}) {
    for (int flags : {O_RDONLY, O_RDWR}) {
      const int fd = kf_open(path, flags | O_CLOEXEC);
      if (fd < 0) continue;
      kf_flock(fd, LOCK_EX | LOCK_NB);
      kf_close(fd);
      return true;
    }
  }
  return false;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (reaches_lock()) return 9;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0, n = kf_numel(&outputs[0]); i < n; ++i)
    out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  return 0;
}
