// remaps_host_image (cpu): the other way to rewrite the host's relocations without mprotect:
// map a fresh writable page over them (MAP_FIXED), copied from the original and patched. The
// host's own image is a protected range of its seccomp filter: an mmap whose address lies in
// it is trapped. Expected: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

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
  (void)stream;
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
  compute(inputs, outputs);
  return 0;
}
