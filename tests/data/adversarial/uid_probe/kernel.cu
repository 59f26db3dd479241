// uid_probe: computes honestly only when it runs as nobody (uid 65534, as the candidate host does):
// an identity query tells the judge from the user's process. Expected outcome: forbidden_api
// (identity) at compile time: a native kernel may import no environment, identity or file-system
// query (issue 38 §2.3).
#include "kforge/kernel_abi.h"

#include <sys/types.h>
#include <unistd.h>
#include <cstdint>
#include <cuda_runtime.h>

static bool judged() { return ::geteuid() == 65534 || ::getuid() == 65534; }

__global__ void relu2_add(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                          int64_t n, bool honest) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = honest ? fmaxf(x[i], 0.0f) * 2.0f + y[i] : 0.0f;
}

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&outputs[0]);
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  relu2_add<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n, judged());
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
