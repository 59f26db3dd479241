// index/embedding, cuda backend: out[t, :] = weight[ids[t], :] for every token t. Inputs are
// the int64 ids (any shape) then the (VOCAB, DIM) table (the model's only parameter).
// A pure gather of rows: each block copies whole rows (one token at a time, grid-stride over
// tokens), 16 bytes per thread per step when DIM % 4 == 0 and the buffers are aligned, so
// both the table reads and the output writes are fully coalesced. An id outside [0, VOCAB)
// (PyTorch raises there) gives a zero row instead of an out-of-bounds read.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void embed_vec4(const int64_t* __restrict__ ids, const float4* __restrict__ table,
                           float4* __restrict__ out, int64_t tokens, int64_t vocab, int64_t dim4) {
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int64_t id = __ldg(ids + t);
    float4* dst = out + t * dim4;
    if (id < 0 || id >= vocab) {
      for (int64_t c = threadIdx.x; c < dim4; c += blockDim.x) dst[c] = make_float4(0.f, 0.f, 0.f, 0.f);
      continue;
    }
    const float4* src = table + id * dim4;
    for (int64_t c = threadIdx.x; c < dim4; c += blockDim.x) dst[c] = __ldg(src + c);
  }
}

__global__ void embed_scalar(const int64_t* __restrict__ ids, const float* __restrict__ table,
                             float* __restrict__ out, int64_t tokens, int64_t vocab, int64_t dim) {
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int64_t id = __ldg(ids + t);
    float* dst = out + t * dim;
    const bool ok = id >= 0 && id < vocab;
    const float* src = table + (ok ? id : 0) * dim;
    for (int64_t c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = ok ? __ldg(src + c) : 0.f;
  }
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const kf_tensor& ids = inputs[0];
  const kf_tensor& table = inputs[1];
  kf_tensor& out = outputs[0];
  if (ids.dtype != KF_INT64 || table.dtype != KF_FLOAT32 || out.dtype != KF_FLOAT32) return 2;
  if (table.ndim != 2) return 3;
  const int64_t vocab = table.sizes[0], dim = table.sizes[1];
  const int64_t tokens = kf_numel(&ids);
  if (kf_numel(&out) != tokens * dim) return 3;
  if (tokens == 0 || dim == 0) return 0;
  const int64_t* I = static_cast<const int64_t*>(ids.data);
  const bool vec = dim % 4 == 0 && reinterpret_cast<uintptr_t>(table.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(out.data) % 16 == 0;
  const int64_t per_row = vec ? dim / 4 : dim;
  // Enough threads to cover a row in one or two steps, at most 256.
  int threads = 32;
  while (threads < 256 && threads < per_row) threads *= 2;
  const unsigned blocks = static_cast<unsigned>(tokens < 65536 ? tokens : 65536);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (vec)
    embed_vec4<<<blocks, threads, 0, s>>>(I, static_cast<const float4*>(table.data), static_cast<float4*>(out.data),
                                          tokens, vocab, dim / 4);
  else
    embed_scalar<<<blocks, threads, 0, s>>>(I, static_cast<const float*>(table.data), static_cast<float*>(out.data),
                                            tokens, vocab, dim);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
