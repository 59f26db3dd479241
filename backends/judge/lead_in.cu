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

/// t[0]: the largest gap between two readings; t[1]: the last reading; t[2] (the stamp's) is
/// cleared, so a stamp that never ran reads as before the spin's end.
__global__ void spin(unsigned long long ns, unsigned long long* t) {
  const unsigned long long start = global_timer();
  unsigned long long prev = start, now = start, gap = 0;
  do {
    now = global_timer();
    if (now - prev > gap) gap = now - prev;
    prev = now;
  } while (now - start < ns);
  t[0] = gap;
  t[1] = now;
  t[2] = 0;
}

__global__ void stamp_kernel(unsigned long long* t) {
  t[2] = global_timer();
}

class CudaLeadIn final : public LeadIn {
 public:
  CudaLeadIn(int device, unsigned long long* t) : device_(device), t_(t) {}
  ~CudaLeadIn() override { cudaFree(t_); }

  std::string launch(uint64_t ns) override {
    cudaSetDevice(device_);
    spin<<<1, 1>>>(ns, t_);
    return last_error();
  }

  uint64_t max_gap_ns() override {
    unsigned long long t[3] = {0, 0, 0};
    if (cudaMemcpy(t, t_, sizeof t, cudaMemcpyDeviceToHost) != cudaSuccess) return UINT64_MAX;
    return t[0];
  }

  std::string stamp() override {
    cudaSetDevice(device_);
    stamp_kernel<<<1, 1>>>(t_);
    return last_error();
  }

  double interval_ms() override {
    unsigned long long t[3] = {0, 0, 0};
    if (cudaMemcpy(t, t_, sizeof t, cudaMemcpyDeviceToHost) != cudaSuccess || t[2] < t[1]) return -1;
    return static_cast<double>(t[2] - t[1]) / 1e6;
  }

 private:
  static std::string last_error() {
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? "" : cudaGetErrorName(err);
  }
  int device_;
  unsigned long long* t_;  ///< device memory: {max gap, spin's end, stamp}
};

}  // namespace

std::unique_ptr<LeadIn> cuda_lead_in(int device, std::string* err) {
  unsigned long long* t = nullptr;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(&t, 3 * sizeof *t);
  if (e != cudaSuccess) {
    *err = cudaGetErrorName(e);
    return nullptr;
  }
  return std::make_unique<CudaLeadIn>(device, t);
}

}  // namespace kforge::runner
