// judge_mem_read (cuda): copies the answer out of the judge instead of computing it. The judge (its
// parent) computed the reference output before calling it; the kernel opens the parent's
// /proc/<ppid>/maps and /proc/<ppid>/mem read-only (read-only opens pass the seccomp filter),
// computes only the first 16 output elements as a fingerprint, finds them in the judge's
// writable mappings and copies the whole output from there. (On the cuda backend the
// judge's reference output is in its own device context, out of reach anyway; the search
// covers the judge's host memory, e.g. staging copies.) The judge is not dumpable and the
// host holds no capability (no CAP_SYS_PTRACE): both opens fail with EACCES, and the output
// is left unwritten. Expected outcome: output_mismatch / unwritten.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
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
bool copy_from_judge(const float* probe, size_t probe_n, float* out, size_t n) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(kf_getppid()));
  int maps = kf_open(path, O_RDONLY);
  std::snprintf(path, sizeof path, "/proc/%d/mem", static_cast<int>(kf_getppid()));
  int mem = kf_open(path, O_RDONLY);
  if (maps < 0 || mem < 0) return false;
  static char buf[1 << 21];
  ssize_t len = 0, r;
  while (len < static_cast<ssize_t>(sizeof buf) - 1 && (r = kf_read(maps, buf + len, sizeof buf - 1 - len)) > 0)
    len += r;
  buf[len] = 0;
  std::vector<char> chunk(1 << 24);
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0};
    std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms);
    line = next;
    if (perms[0] != 'r' || perms[1] != 'w') continue;
    for (unsigned long a = lo; a < hi; a += chunk.size()) {
      const size_t want = std::min<unsigned long>(chunk.size(), hi - a);
      if (kf_pread(mem, chunk.data(), want, static_cast<off_t>(a)) != static_cast<ssize_t>(want)) break;
      for (size_t off = 0; off + probe_n * 4 <= want; off += 4)
        if (std::memcmp(chunk.data() + off, probe, probe_n * 4) == 0 &&
            kf_pread(mem, out, n * 4, static_cast<off_t>(a + off)) == static_cast<ssize_t>(n * 4))
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
  float x[16], y[16];
  cudaMemcpy(x, inputs[0].data, sizeof x, cudaMemcpyDeviceToHost);
  cudaMemcpy(y, inputs[1].data, sizeof y, cudaMemcpyDeviceToHost);
  float probe[16];
  for (int i = 0; i < 16; ++i) probe[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
  const size_t n = static_cast<size_t>(kf_numel(&outputs[0]));
  std::vector<float> host(n);
  if (copy_from_judge(probe, 16, host.data(), n))
    cudaMemcpy(outputs[0].data, host.data(), n * 4, cudaMemcpyHostToDevice);
  return 0;
}
