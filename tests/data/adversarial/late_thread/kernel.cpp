// late_thread: returns at once and leaves a detached thread to write the output 20 ms later,
// so that the judge's clock (request to reply) sees almost nothing. Threads are allowed, but
// the judge freezes the whole candidate host (SIGSTOP, every thread) as soon as the reply
// arrives and reads the output while it is frozen: the thread has not written yet.
// Expected outcome: output_mismatch / unwritten.
#include "kforge/kernel_abi.h"

#include <chrono>
#include <cstdint>
#include <thread>

static void compute(const kf_tensor* inputs, kf_tensor* outputs) {
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y = static_cast<const float*>(inputs[1].data);
  float* out = static_cast<float*>(outputs[0].data);
  const int64_t n = kf_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] > 0.0f ? x[i] : 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;
  if (n_inputs != 2 || n_outputs != 1) return 1;
  kf_tensor in[2] = {inputs[0], inputs[1]};
  kf_tensor out = outputs[0];
  std::thread([in, out]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    compute(in, &out);
  }).detach();
  return 0;
}
