// rewrite_pristine (cuda): looks for the judge's pristine copy of its input, to make "the truth"
// agree with a wrong answer. It scans every readable mapping of its process for another copy
// of the first 256 bytes of x (copied from the device; anything but that copy), makes it writable (mprotect) and zeroes
// it, then answers as if x were zero (out = y), hoping the reference is computed from the
// zeroed copy. The judge keeps pristine inputs, parameters and the reference outputs in its
// own process; the candidate host holds only the shared copy. Expected outcome:
// output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
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

namespace {
constexpr size_t kProbe = 256;

int zero_other_copies(const unsigned char* probe, const void* own) {
  int fd = kf_open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return 0;
  static char buf[1 << 20];
  ssize_t len = 0, n;
  while (len < static_cast<ssize_t>(sizeof buf) - 1 && (n = kf_read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += n;
  kf_close(fd);
  buf[len] = 0;
  int found = 0;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0}, path[512] = {0};
    std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path);
    line = next;
    if (perms[0] != 'r' || std::strncmp(path, "/dev/", 5) == 0 || path[0] == '[') continue;
    for (unsigned long a = lo; a + kProbe <= hi; a += 64) {
      auto* p = reinterpret_cast<unsigned char*>(a);
      if (p == own || p == probe || std::memcmp(p, probe, kProbe) != 0) continue;
      ++found;
      unsigned long page = a & ~4095UL;
      if (perms[1] != 'w' && ::mprotect(reinterpret_cast<void*>(page), 2 * 4096, PROT_READ | PROT_WRITE) != 0)
        continue;
      std::memset(p, 0, kProbe);
    }
  }
  return found;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static unsigned char probe[kProbe];  // our own copy of the probe, skipped by the scan
  if (cudaMemcpy(probe, inputs[0].data, kProbe, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  zero_other_copies(probe, probe);
  // relu(0) * 2 + y
  return cudaMemcpyAsync(outputs[0].data, inputs[1].data, kf_numel(&outputs[0]) * sizeof(float),
                         cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)) == cudaSuccess ? 0 : 3;
}
