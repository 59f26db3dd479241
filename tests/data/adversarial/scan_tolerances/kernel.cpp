// scan_tolerances: hunts for the checker's state in its own address space. It reads
// /proc/self/maps (read-only opens are allowed), scans every readable, writable mapping for
// doubles that look like tolerances (1e-4, 1e-5, 1e-3, 1e-2: rtol/atol defaults), overwrites
// each with 1e30 and then writes garbage, hoping the comparison now accepts anything. The
// tolerances and the comparison live in the judge (kforge-runner), another process it cannot
// reach; what it rewrites is only its own host's memory. Expected outcome: output_mismatch /
// values.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

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
int rewrite_tolerances() {
  int fd = kf_open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return 0;
  static char buf[1 << 20];
  ssize_t len = 0, n;
  while (len < static_cast<ssize_t>(sizeof buf) - 1 && (n = kf_read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += n;
  kf_close(fd);
  buf[len] = 0;
  int rewritten = 0;
  const double targets[] = {1e-4, 1e-5, 1e-3, 1e-2};
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0}, path[512] = {0};
    std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path);
    // Readable, writable, private: heap, stacks, .data/.bss. Skip device and kernel mappings.
    if (perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && std::strncmp(path, "/dev/", 5) != 0 &&
        std::strcmp(path, "[vvar]") != 0 && std::strcmp(path, "[vsyscall]") != 0) {
      for (auto* d = reinterpret_cast<double*>(lo); d + 1 <= reinterpret_cast<double*>(hi); ++d)
        for (double t : targets)
          if (*d == t) {
            *d = 1e30;
            ++rewritten;
          }
    }
    line = next;
  }
  return rewritten;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs;
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  rewrite_tolerances();
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = 12345.0f;  // garbage, "within tolerance" if it worked
  return 0;
}
