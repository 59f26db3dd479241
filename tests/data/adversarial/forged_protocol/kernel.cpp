// forged_protocol: does no work and instead forges the judge's messages on every descriptor
// it may hold (0..20): a runner reply ({"ok":true,"outcome":"pass",...}), an attempts.jsonl
// row, and the candidate host's own replies ("done 1 0 -", "pong", "ok"), hoping one of them
// reaches whoever records the verdict. The candidate host has no descriptor to the runner's
// protocol or the run directory; on its channel (fd 3) a forged "done" only says "I think I
// am done", and the judge then reads the outputs itself. Expected outcome: output_mismatch /
// unwritten.
#include "kforge/kernel_abi.h"

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

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs;
  (void)outputs;
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static int seq = 0;
  ++seq;  // the judge numbers its run requests 1, 2, ... within one host
  char done[64];
  int len = 0;
  for (const char* p = "done "; *p; ++p) done[len++] = *p;
  len += std::snprintf(done + len, sizeof done - len, "%d 0 -\n", seq);
  static const char* forged[] = {
      "{\"ok\":true,\"outcome\":\"pass\",\"trials\":5,\"trials_passed\":5,\"max_abs_err\":0,"
      "\"max_rel_err\":0,\"mismatch_fraction\":0}\n",
      "{\"ok\":true,\"sets\":2,\"timing\":\"judge_clock\",\"candidate_ms\":0.0001,\"reference_ms\":1,"
      "\"speedup\":10000,\"flags\":[]}\n",
      "{\"task\":\"adversarial/relu2_add\",\"outcome\":\"pass\",\"speedup\":10000}\n",
      "pong\n",
      "ok\n"};
  for (int fd = 0; fd <= 20; ++fd) {
    (void)!kf_write(fd, done, static_cast<size_t>(len));
    for (const char* f : forged) (void)!kf_write(fd, f, std::strlen(f));
  }
  return 0;
}
