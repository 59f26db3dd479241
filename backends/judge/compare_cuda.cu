// The one-pass comparison on the GPU (compare_cuda.hpp).
#include <cuda_runtime.h>

#include <vector>

#include "compare_cuda.hpp"

namespace kforge::runner::fused {

namespace {

constexpr int kThreads = 256;
constexpr int kBlocks = 1024;

/// Tree reduction of one partial per thread; thread 0 writes the block's partial.
template <class S>
__device__ void reduce_block(S mine, S* block_out) {
  // Raw bytes: a __shared__ array of a type with default member initializers is not allowed.
  __shared__ alignas(8) unsigned char raw[kThreads * sizeof(S)];
  S* sh = reinterpret_cast<S*>(raw);
  sh[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) merge(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) *block_out = sh[0];
}

__global__ void reference_pass(const void* e, int64_t n, FloatKind kind, ReferenceStats* partials) {
  ReferenceStats s;
  uint64_t bits = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    fold_reference(s, load(e, i, kind, &bits));
  reduce_block(s, &partials[blockIdx.x]);
}

__global__ void output_pass(const void* a, const void* e, int64_t n, FloatKind kind, Rule rule,
                            OutputStats* partials) {
  OutputStats s;
  uint64_t a_bits = 0, e_bits = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double av = load(a, i, kind, &a_bits);
    fold_output(s, av, a_bits, load(e, i, kind, &e_bits), kind, rule);
  }
  reduce_block(s, &partials[blockIdx.x]);
}

/// Copies the partials back (the legacy stream orders it after the kernel) and merges them.
template <class S>
std::string gather(const void* scratch, S* out) {
  std::vector<S> part(kBlocks);
  if (cudaError_t err = cudaGetLastError(); err != cudaSuccess) return cudaGetErrorName(err);
  if (cudaError_t err = cudaMemcpy(part.data(), scratch, kBlocks * sizeof(S), cudaMemcpyDeviceToHost);
      err != cudaSuccess)
    return cudaGetErrorName(err);
  *out = S{};
  for (const S& p : part) merge(*out, p);
  return "";
}

}  // namespace

std::size_t cuda_scratch_bytes() {
  return kBlocks *
         (sizeof(ReferenceStats) > sizeof(OutputStats) ? sizeof(ReferenceStats) : sizeof(OutputStats));
}

std::string cuda_reference_stats(const void* expected, int64_t n, FloatKind kind, void* scratch,
                                 ReferenceStats* out) {
  reference_pass<<<kBlocks, kThreads>>>(expected, n, kind, static_cast<ReferenceStats*>(scratch));
  return gather(scratch, out);
}

std::string cuda_output_stats(const void* actual, const void* expected, int64_t n, FloatKind kind,
                              const Rule& rule, void* scratch, OutputStats* out) {
  output_pass<<<kBlocks, kThreads>>>(actual, expected, n, kind, rule, static_cast<OutputStats*>(scratch));
  return gather(scratch, out);
}

}  // namespace kforge::runner::fused
