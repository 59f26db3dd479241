// patches_host_image (cuda): the first step of "work after done" (issue 19): rewrite the host's
// own relocations so that its reply path runs the candidate's code after "done". It finds the
// host's executable in /proc/self/maps and asks for its read-only relocation pages (full
// RELRO) to be made writable again. The host's own image is a protected range of its seccomp
// filter: the mprotect is trapped. Expected: forbidden_api / sandbox.
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

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

/// The host executable's last read-only mapping (its RELRO segment: .got among it).
static bool host_relro(unsigned long* lo, unsigned long* hi) {
  char exe[512] = {0};
  if (::readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return false;
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long a = 0, b = 0;
    char perms[8] = {0};
    if (std::sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3) continue;
    if (std::strstr(line, exe) && std::strcmp(perms, "r--p") == 0) {
      *lo = a;
      *hi = b;
      found = true;
    }
  }
  std::fclose(f);
  return found;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  unsigned long lo = 0, hi = 0;
  if (!host_relro(&lo, &hi)) return 8;  // a different failure: the attack could not even start
  if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0) return 9;  // open
  return launch(inputs, outputs, stream);  // refused without a trap: it would pass, and the test fails
}
