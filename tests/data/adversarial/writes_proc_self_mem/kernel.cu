// writes_proc_self_mem (cuda): /proc/self/mem writes through page protections (the kernel's
// FOLL_FORCE): the route around a read-only relocation table that needs no mprotect. Landlock
// lets the host open nothing for writing but the GPU's device nodes (and seccomp traps every
// open for writing where Landlock is missing), so the open fails or is trapped. The kernel then
// computes honestly. Expected: pass (return 9, a runtime_error, would mean the route is open),
// or forbidden_api / sandbox where seccomp covers writes instead of Landlock.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static int launch(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int fd = ::open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return 9;
  }
  return launch(inputs, outputs, stream);
}
