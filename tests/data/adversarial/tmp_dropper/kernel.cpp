// tmp_dropper: computes correctly, and plants state for later candidates: it writes a shared
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

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  compute(inputs, outputs);
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
  if (fd < 0) fd = ::open("/tmp/kforge_hook.so", O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (fd >= 0) {
    static const char elf[] = "\x7f" "ELF";
    (void)!::write(static_cast<int>(fd), elf, 4);
    ::close(static_cast<int>(fd));
  }
  int pre = ::open("/etc/ld.so.preload", O_WRONLY | O_APPEND);
  if (pre >= 0) (void)!::write(pre, "/tmp/kforge_hook.so\n", 20);
  return 0;
}
