// scan_tolerances: hunts for the checker's state in its own address space. It reads
// /proc/self/maps (read-only opens are allowed), scans every readable, writable mapping for
// doubles that look like tolerances (1e-4, 1e-5, 1e-3, 1e-2: rtol/atol defaults), overwrites
// each with 1e30 and then writes garbage, hoping the comparison now accepts anything. The
// tolerances and the comparison live in the judge (kforge-runner), another process it cannot
// reach; what it rewrites is only its own host's memory. Expected outcome: output_mismatch /
// values.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {
int rewrite_tolerances() {
  int fd = ::open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return 0;
  static char buf[1 << 20];
  ssize_t len = 0, n;
  while (len < static_cast<ssize_t>(sizeof buf) - 1 && (n = ::read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += n;
  ::close(fd);
  buf[len] = 0;
  int rewritten = 0;
  const double targets[] = {1e-4, 1e-5, 1e-3, 1e-2};
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0}, path[512] = {0};
    std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path);
    // Readable, writable, private: heap, stacks, .data/.bss. Skip device and kernel mappings.
    if (perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && std::strncmp(path, "/dev/", 5) != 0 &&
        std::strcmp(path, "[vvar]") != 0 && std::strcmp(path, "[vsyscall]") != 0) {
      for (auto* d = reinterpret_cast<double*>(lo); d + 1 <= reinterpret_cast<double*>(hi); ++d)
        for (double t : targets)
          if (*d == t) {
            *d = 1e30;
            ++rewritten;
          }
    }
    line = next;
  }
  return rewritten;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs;
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  rewrite_tolerances();
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = 12345.0f;  // garbage, "within tolerance" if it worked
  return 0;
}
