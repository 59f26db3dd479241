// holds_timed_lock (cuda): as kernel.cpp, for the GPU's lock (/run/kforge-locks/cuda-<bus id>.lock,
// or /tmp/kforge-locks-<uid>/...): it lists the lock directory, and opens every lock it finds.
// Expected: pass (return 9, a runtime_error, would mean it could list, open or lock them).
#include <cuda_runtime.h>
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
__global__ void relu2_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                          int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

bool reaches_lock() {
  char user_dir[64];
  std::snprintf(user_dir, sizeof user_dir, "/tmp/kforge-locks-%u", static_cast<unsigned>(kf_geteuid()));
  for (const char* dir : {"/run/kforge-locks", "/tmp/kforge-locks-0", static_cast<const char*>(user_dir)}) {
    const int dfd = kf_open(dir, O_RDONLY | O_CLOEXEC);
    if (dfd >= 0) {  // a directory it could open at all: flock on it, or list its locks
      kf_flock(dfd, LOCK_EX | LOCK_NB);
      kf_close(dfd);
      return true;
    }
  }
  return false;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (reaches_lock()) return 9;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  relu2_add<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
