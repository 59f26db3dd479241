// The GPU lead-in of a timed batch (lead_in.hpp).
#include <cuda_runtime.h>

#include <chrono>

#include "lead_in.hpp"
#include "spin.cuh"

namespace kforge::runner {

namespace {

/// t[0]: the largest gap between two readings; t[1]: the last reading; t[2] (the stamp's) is
/// cleared, so a stamp that never ran reads as before the spin's end. `started` (mapped host
/// memory) is set first: the judge sends the candidate its request only once it reads it.
__global__ void spin(unsigned long long ns, unsigned long long* t, volatile unsigned int* started) {
  unsigned long long first = 0;
  spin_for(ns, started, &first, &t[1], &t[0]);
  t[2] = 0;
}

__global__ void stamp_kernel(unsigned long long* t) {
  t[2] = global_timer();
}

class CudaLeadIn final : public LeadIn {
 public:
  CudaLeadIn(int device, unsigned long long* t, volatile unsigned int* started, unsigned int* started_dev)
      : device_(device), t_(t), started_(started), started_dev_(started_dev) {}
  ~CudaLeadIn() override {
    cudaFree(t_);
    cudaFreeHost(const_cast<unsigned int*>(started_));
  }

  std::string launch(uint64_t ns) override {
    cudaSetDevice(device_);
    *started_ = 0;
    spin<<<1, 1>>>(ns, t_, started_dev_);
    if (std::string e = last_error(); !e.empty()) return e;
    // Until the spin runs, a candidate's kernels queued now could run first, before the clock
    // starts and outside any gap the spin could see: the request waits for it.
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (*started_ == 0)
      if (std::chrono::steady_clock::now() > deadline) return "the lead-in did not start within 200 ms";
    return "";
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
  static constexpr auto kStartTimeout = std::chrono::milliseconds(200);
  int device_;
  unsigned long long* t_;           ///< device memory: {max gap, spin's end, stamp}
  volatile unsigned int* started_;  ///< mapped host memory: the spin has started
  unsigned int* started_dev_;       ///< the same, as the device sees it
};

}  // namespace

std::unique_ptr<LeadIn> cuda_lead_in(int device, std::string* err) {
  unsigned long long* t = nullptr;
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMalloc(&t, 3 * sizeof *t);
  unsigned int* started = nullptr;
  unsigned int* started_dev = nullptr;
  if (e == cudaSuccess) e = cudaHostAlloc(&started, sizeof *started, cudaHostAllocMapped);
  if (e == cudaSuccess) e = cudaHostGetDevicePointer(&started_dev, started, 0);
  if (e != cudaSuccess) {
    *err = cudaGetErrorName(e);
    if (t) cudaFree(t);
    if (started) cudaFreeHost(started);
    return nullptr;
  }
  *started = 0;
  return std::make_unique<CudaLeadIn>(device, t, started, started_dev);
}

}  // namespace kforge::runner
