// rewrite_pristine: looks for the judge's pristine copy of its input, to make "the truth"
// agree with a wrong answer. It scans every readable mapping of its process for another copy
// of the first 256 bytes of x (anything but x itself), makes it writable (mprotect) and zeroes
// it, then answers as if x were zero (out = y), hoping the reference is computed from the
// zeroed copy. The judge keeps pristine inputs, parameters and the reference outputs in its
// own process; the candidate host holds only the shared copy. Expected outcome:
// output_mismatch / values.
#include "kforge/kernel_abi.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {
constexpr size_t kProbe = 256;

int zero_other_copies(const unsigned char* probe, const void* own) {
  int fd = ::open("/proc/self/maps", O_RDONLY);
  if (fd < 0) return 0;
  static char buf[1 << 20];
  ssize_t len = 0, n;
  while (len < static_cast<ssize_t>(sizeof buf) - 1 && (n = ::read(fd, buf + len, sizeof buf - 1 - len)) > 0)
    len += n;
  ::close(fd);
  buf[len] = 0;
  int found = 0;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long lo = 0, hi = 0;
    char perms[8] = {0}, path[512] = {0};
    std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path);
    line = next;
    if (perms[0] != 'r' || std::strncmp(path, "/dev/", 5) == 0 || path[0] == '[') continue;
    for (unsigned long a = lo; a + kProbe <= hi; a += 64) {
      auto* p = reinterpret_cast<unsigned char*>(a);
      if (p == own || p == probe || std::memcmp(p, probe, kProbe) != 0) continue;
      ++found;
      unsigned long page = a & ~4095UL;
      if (perms[1] != 'w' && ::mprotect(reinterpret_cast<void*>(page), 2 * 4096, PROT_READ | PROT_WRITE) != 0)
        continue;
      std::memset(p, 0, kProbe);
    }
  }
  return found;
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static unsigned char probe[kProbe];  // our own copy of the probe, skipped by the scan
  std::memcpy(probe, inputs[0].data, kProbe);
  zero_other_copies(probe, inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = y[i];  // relu(0) * 2 + y
  return 0;
}
