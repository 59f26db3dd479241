// tmp_dropper (cuda): computes correctly, and plants state for later candidates: it writes a shared
// object to /tmp and appends an LD_PRELOAD line to /etc/ld.so.preload, so that every process
// started later (the next candidate host, the compiler) would load its hook. It tries
// openat2 first (answers ENOSYS under the filter), then open with O_CREAT. The candidate
// host's seccomp filter traps every open that could write or create. Expected outcome:
// forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cuda_runtime.h>

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

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static void compute(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  compute(inputs, outputs, stream);
  struct {
    unsigned long long flags, mode, resolve;
  } how{O_WRONLY | O_CREAT | O_TRUNC, 0755, 0};
  long fd = -1;
#ifdef SYS_openat2
  register long size asm("r10") = sizeof how;
  asm volatile("syscall"
               : "=a"(fd)
               : "a"(SYS_openat2), "D"(AT_FDCWD), "S"("/tmp/kforge_hook.so"), "d"(&how), "r"(size)
               : "rcx", "r11", "memory");
#endif
  if (fd < 0) fd = kf_open("/tmp/kforge_hook.so", O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (fd >= 0) {
    static const char elf[] = "\x7f" "ELF";
    (void)!kf_write(static_cast<int>(fd), elf, 4);
    kf_close(static_cast<int>(fd));
  }
  int pre = kf_open("/etc/ld.so.preload", O_WRONLY | O_APPEND);
  if (pre >= 0) (void)!kf_write(pre, "/tmp/kforge_hook.so\n", 20);
  return 0;
}
