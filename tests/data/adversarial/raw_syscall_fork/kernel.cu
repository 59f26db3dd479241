// raw_syscall_fork (cuda): launches the right kernel, but first starts a shell through raw
// `syscall` instructions (inline assembly in host code: no fork/execve/syscall symbol for the
// symbol check to see). The candidate host's seccomp filter traps clone without CLONE_THREAD,
// fork and execve. Expected outcome: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

namespace {
long raw_syscall(long nr, long a, long b, long c) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}
constexpr long kFork = 57, kExecve = 59, kExit = 60, kClone = 56;
constexpr long kSigchld = 17;
}  // namespace

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  long pid = raw_syscall(kClone, kSigchld, 0, 0);
  if (pid < 0) pid = raw_syscall(kFork, 0, 0, 0);
  if (pid == 0) {
    static const char* argv[] = {"/bin/sh", "-c", "echo pwned > /tmp/kforge_pwned", nullptr};
    raw_syscall(kExecve, reinterpret_cast<long>(argv[0]), reinterpret_cast<long>(argv), 0);
    raw_syscall(kExit, 0, 0, 0);
  }
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
