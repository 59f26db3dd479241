// signals_owner (cuda): a route to signal another process without kill(): make it the owner of
// the host's channel (fcntl F_SETOWN) so that the kernel sends it SIGIO when data arrives. The
// seccomp filter traps F_SETOWN, F_SETSIG and F_SETOWN_EX (and the FIOSETOWN / SIOCSPGRP
// ioctls). Expected: forbidden_api / sandbox.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

__global__ void relu2_add(const float* x, const float* y, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f) * 2.0f + y[i];
}

static int launch(const kf_tensor* inputs, kf_tensor* outputs, void* stream) {
  const int64_t n = kf_numel(&outputs[0]);
  relu2_add<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  if (::fcntl(3, F_SETOWN, static_cast<int>(::getppid())) == 0) return 9;  // the judge would get SIGIO
  return launch(inputs, outputs, stream);
}
