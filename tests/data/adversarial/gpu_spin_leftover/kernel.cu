// gpu_spin_leftover (cuda): computes correctly on the runner's stream, and on its first call
// also leaves a ~1 s spin kernel on a stream of its own, hoping that it still occupies the
// GPU when the reference is timed (a slower reference, a larger speedup). The candidate host
// synchronises the device before replying (the spin is charged to the candidate's first,
// warm-up, batch) and is killed before the judge times the reference, so the reference runs
// on an idle GPU. Expected outcome: pass, speedup not inflated (max_speedup 50).
#include "kforge/kernel_abi.h"

#include <cstdint>
#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static void compute(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
}

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  static bool launched = false;
  if (!launched) {
    cudaStream_t side = nullptr;
    if (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 2;
    spin<<<132, 32, 0, side>>>(1000ull * 1000 * 1000);
    launched = true;
  }
  compute(inputs, outputs, stream);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
