// late_side_stream (cuda): launches the right computation, behind a 2 ms spin, on a
// non-blocking stream of its own and returns at once, so that work on the runner's stream
// (and an event-based timer on it) would see nothing. The candidate host synchronises the
// whole device before it replies, and the judge times from request to reply: the work
// completes (the output is right) and its time, spin included, is charged. Expected
// outcome: pass, with a speedup below 1 (max_speedup 1: the 2 ms per call was charged).
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void slow_relu2_add(const float* x, const float* y, float* out, int64_t n, long long spin) {
  const long long t0 = clock64();
  while (clock64() - t0 < spin) {
  }
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  (void)stream;  // deliberately not used
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static cudaStream_t side = nullptr;
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 2;
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  const int64_t n = kf_numel(&outputs[0]);
  slow_relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, side>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n, 2LL * (khz > 0 ? khz : 1500000));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
