// patches_host_image (cpu): the first step of "work after done" (issue 19): rewrite the host's
// own relocations so that its reply path runs the candidate's code after "done". It finds the
// host's executable in /proc/self/maps and asks for its read-only relocation pages (full
// RELRO) to be made writable again. The host's own image is a protected range of its seccomp
// filter: the mprotect is trapped. Expected: forbidden_api / sandbox.
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
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  unsigned long lo = 0, hi = 0;
  if (!host_relro(&lo, &hi)) return 8;  // a different failure: the attack could not even start
  if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) == 0) return 9;  // open
  compute(inputs, outputs);  // refused without a trap: it would pass, and the test fails
  return 0;
}
