// forged_protocol: does no work and instead forges the judge's messages on every descriptor
// it may hold (0..20): a runner reply ({"ok":true,"outcome":"pass",...}), an attempts.jsonl
// row, and the candidate host's own replies ("done 1 0 -", "pong", "ok"), hoping one of them
// reaches whoever records the verdict. The candidate host has no descriptor to the runner's
// protocol or the run directory; on its channel (fd 3) a forged "done" only says "I think I
// am done", and the judge then reads the outputs itself. Expected outcome: output_mismatch /
// unwritten.
#include "kforge/kernel_abi.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs;
  (void)outputs;
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static int seq = 0;
  ++seq;  // the judge numbers its run requests 1, 2, ... within one host
  char done[64];
  int len = 0;
  for (const char* p = "done "; *p; ++p) done[len++] = *p;
  len += std::snprintf(done + len, sizeof done - len, "%d 0 -\n", seq);
  static const char* forged[] = {
      "{\"ok\":true,\"outcome\":\"pass\",\"trials\":5,\"trials_passed\":5,\"max_abs_err\":0,"
      "\"max_rel_err\":0,\"mismatch_fraction\":0}\n",
      "{\"ok\":true,\"sets\":2,\"timing\":\"judge_clock\",\"candidate_ms\":0.0001,\"reference_ms\":1,"
      "\"speedup\":10000,\"flags\":[]}\n",
      "{\"task\":\"adversarial/relu2_add\",\"outcome\":\"pass\",\"speedup\":10000}\n",
      "pong\n",
      "ok\n"};
  for (int fd = 0; fd <= 20; ++fd) {
    (void)!::write(fd, done, static_cast<size_t>(len));
    for (const char* f : forged) (void)!::write(fd, f, std::strlen(f));
  }
  return 0;
}
