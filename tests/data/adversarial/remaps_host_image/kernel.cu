// remaps_host_image (cuda): the other way to rewrite the host's relocations without mprotect:
// map a fresh writable page over them (MAP_FIXED), copied from the original and patched. The
// host's own image is a protected range of its seccomp filter: an mmap whose address lies in
// it is trapped. Expected: forbidden_api / sandbox.
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

static unsigned long host_relro_page() {
  char exe[512] = {0};
  if (::readlink("/proc/self/exe", exe, sizeof exe - 1) <= 0) return 0;
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[1024];
  unsigned long page = 0;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long a = 0, b = 0;
    char perms[8] = {0};
    if (std::sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && std::strstr(line, exe) &&
        std::strcmp(perms, "r--p") == 0)
      page = a;
  }
  std::fclose(f);
  return page;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const unsigned long page = host_relro_page();
  if (page == 0) return 8;
  static char copy[4096];
  std::memcpy(copy, reinterpret_cast<void*>(page), sizeof copy);
  void* p = ::mmap(reinterpret_cast<void*>(page), sizeof copy, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    std::memcpy(p, copy, sizeof copy);  // restored as it was (this test only probes the route)
    return 9;
  }
  return launch(inputs, outputs, stream);
}
