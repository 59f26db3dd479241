// never_returns: a kernel whose loop never ends (the asm statement is a side effect, so the
// compiler may not delete it); kf_forward itself returns, the stream never drains.
// Expected outcome: timeout.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

__global__ void spin_forever(float* out) {
  for (;;) {
    asm volatile("");
  }
  out[threadIdx.x] = 0.0f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)inputs, (void)n_inputs;
  if (n_outputs != 1) return 1;
  spin_forever<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<float*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
