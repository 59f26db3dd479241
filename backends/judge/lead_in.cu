// The GPU lead-in of a timed batch (lead_in.hpp).
#include <cuda_runtime.h>

#include "lead_in.hpp"

namespace kforge::runner {

namespace {

__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns, unsigned long long* max_gap) {
  const unsigned long long start = global_timer();
  unsigned long long prev = start, now = start, gap = 0;
  do {
    now = global_timer();
    if (now - prev > gap) gap = now - prev;
    prev = now;
  } while (now - start < ns);
  *max_gap = gap;
}

class CudaLeadIn final : public LeadIn {
 public:
  CudaLeadIn(int device, unsigned long long* gap) : device_(device), gap_(gap) {}
  ~CudaLeadIn() override { cudaFree(gap_); }

  std::string launch(uint64_t ns) override {
    cudaSetDevice(device_);
    spin<<<1, 1>>>(ns, gap_);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? "" : cudaGetErrorName(err);
  }

  uint64_t max_gap_ns() override {
    unsigned long long g = 0;
    if (cudaMemcpy(&g, gap_, sizeof g, cudaMemcpyDeviceToHost) != cudaSuccess) return UINT64_MAX;
    return g;
  }

 private:
  int device_;
  unsigned long long* gap_;
};

}  // namespace

std::unique_ptr<LeadIn> cuda_lead_in(int device, std::string* err) {
  unsigned long long* gap = nullptr;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(&gap, sizeof *gap);
  if (e != cudaSuccess) {
    *err = cudaGetErrorName(e);
    return nullptr;
  }
  return std::make_unique<CudaLeadIn>(device, gap);
}

}  // namespace kforge::runner
