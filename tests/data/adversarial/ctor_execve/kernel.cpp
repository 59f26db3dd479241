// ctor_execve: the attack runs at load time, before kf_forward is ever called: a constructor
// replaces the candidate host with a shell (raw execve through inline assembly, so that no
// exec* symbol appears). A shell in place of the host could answer the judge's protocol
// itself. The host confines itself before it loads the artifact, so the constructor already
// runs under the seccomp filter. Expected outcome: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <cstdint>

namespace {
long raw_syscall(long nr, long a, long b, long c) {
  long ret;
  asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}

__attribute__((constructor)) void at_load() {
  static const char* argv[] = {"/bin/sh", "-c", "while read l; do echo 'done 1 0 -'; done", nullptr};
  raw_syscall(59 /* execve */, reinterpret_cast<long>(argv[0]), reinterpret_cast<long>(argv), 0);
}
}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs;
  (void)outputs;
  (void)stream;
  return n_inputs == 2 && n_outputs == 1 ? 0 : 1;
}
