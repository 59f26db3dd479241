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
