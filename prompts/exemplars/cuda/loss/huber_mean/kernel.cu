// loss/huber_mean, cuda backend: mean over all elements of
//   0.5 d^2 if |d| < delta, else delta (|d| - 0.5 delta),     d = pred - target, delta = 1.
// Inputs: pred, target (same shape). Output: a 0-dim tensor.
// Two launches, deterministic (no atomics): (1) a fixed grid of blocks streams the inputs with
// float4 loads in a grid-stride loop, each thread summing its elements and each block reducing to
// one partial sum; (2) one block adds the partials in double and writes sum / n. The scratch array
// of partials comes from the stream-ordered allocator.
#include "kforge/kernel_abi.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr float kDelta = 1.0f;  // DELTA of the task
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

__device__ __forceinline__ float huber(float p, float t) {
  const float ad = fabsf(p - t);
  return ad < kDelta ? 0.5f * ad * ad : kDelta * (ad - 0.5f * kDelta);
}

template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kThreads / 32 ? scratch[lane] : T(0);
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;  // valid in thread 0
}

__global__ void __launch_bounds__(kThreads)
    partial_sums(const float* __restrict__ p, const float* __restrict__ t, int64_t n, bool vec4,
                 float* __restrict__ partials) {
  __shared__ float scratch[32];
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  float acc = 0.0f;
  int64_t tail = 0;
  if (vec4) {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const float4* t4 = reinterpret_cast<const float4*>(t);
    const int64_t n4 = n / 4;
    for (int64_t i = first; i < n4; i += stride) {
      const float4 a = p4[i], b = t4[i];
      acc += huber(a.x, b.x) + huber(a.y, b.y) + huber(a.z, b.z) + huber(a.w, b.w);
    }
    tail = n4 * 4;
  }
  for (int64_t i = tail + first; i < n; i += stride) acc += huber(p[i], t[i]);
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(kThreads)
    finish(const float* __restrict__ partials, int count, int64_t n, float* __restrict__ out) {
  __shared__ double scratch[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) out[0] = static_cast<float>(acc / static_cast<double>(n));
}

}  // namespace

extern "C" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,
                          void* stream) {
  if (n_inputs != 2 || n_outputs != 1) return 1;
  const int64_t n = kf_numel(&inputs[0]);
  if (kf_numel(&inputs[1]) != n || kf_numel(&outputs[0]) != 1 || n == 0) return 2;
  const float* p = static_cast<const float*>(inputs[0].data);
  const float* t = static_cast<const float*>(inputs[1].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const bool vec4 = reinterpret_cast<uintptr_t>(p) % 16 == 0 && reinterpret_cast<uintptr_t>(t) % 16 == 0;
  int64_t blocks = ((vec4 ? n / 4 : n) + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (blocks < 1) blocks = 1;
  float* partials = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void**>(&partials), sizeof(float) * blocks, s) != cudaSuccess) return 6;
  partial_sums<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(p, t, n, vec4, partials);
  finish<<<1, kThreads, 0, s>>>(partials, static_cast<int>(blocks), n, static_cast<float*>(outputs[0].data));
  const cudaError_t launched = cudaGetLastError();
  cudaFreeAsync(partials, s);
  return launched == cudaSuccess ? 0 : 4;
}
