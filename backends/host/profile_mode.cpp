// kforge-host --profile: one candidate call for Nsight Compute (host.hpp).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host.hpp"
#include "kforge/backends/profile_gate.hpp"

#ifdef KFORGE_HOST_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#endif

namespace kforge::host {

namespace {

struct TensorLine {
  bool input = true;
  kf_tensor t{};
  int64_t bytes = 0;
};

/// Parses the header; leaves `in` at the first data byte. "" on success.
std::string read_header(std::istream& in, std::vector<TensorLine>* lines) {
  std::string line;
  if (!std::getline(in, line) || line != "kforge-tensors 1") return "not a kforge tensor file";
  while (std::getline(in, line) && line != "data") {
    std::istringstream ls(line);
    std::string kind;
    TensorLine tl;
    ls >> kind >> tl.t.dtype >> tl.t.ndim;
    if ((kind != "in" && kind != "out") || !ls || tl.t.ndim < 0 || tl.t.ndim > KF_MAX_DIMS)
      return "bad line: " + line;
    tl.input = kind == "in";
    int64_t numel = 1;
    for (int d = 0; d < tl.t.ndim; ++d) {
      ls >> tl.t.sizes[d];
      if (!ls || tl.t.sizes[d] < 0) return "bad line: " + line;
      numel *= tl.t.sizes[d];
    }
    int64_t stride = 1;
    for (int d = tl.t.ndim - 1; d >= 0; --d) {
      tl.t.strides[d] = stride;
      stride *= tl.t.sizes[d];
    }
    tl.bytes = numel * elem_size(tl.t.dtype);
    lines->push_back(tl);
  }
  return line == "data" ? "" : "no data line";
}

/// Places every tensor on the device (or in host memory when device < 0), inputs filled
/// from the file. "" on success.
std::string place(std::istream& in, int device, std::vector<TensorLine>* lines) {
  for (auto& tl : *lines) {
    std::vector<char> host(static_cast<std::size_t>(tl.bytes));
    if (tl.input && !in.read(host.data(), static_cast<std::streamsize>(host.size())))
      return "the data ends early";
    tl.t.device = device;
    if (device < 0) {
      char* p = new char[host.size() + 1];
      std::memcpy(p, host.data(), host.size());
      tl.t.data = p;
      continue;
    }
#ifdef KFORGE_HOST_CUDA
    void* p = nullptr;
    if (cudaMalloc(&p, host.size() + 1) != cudaSuccess ||
        cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice) != cudaSuccess)
      return std::string("cuda: ") + cudaGetErrorString(cudaGetLastError());
    tl.t.data = p;
#else
    return "this kforge-host was built without CUDA";
#endif
  }
  return "";
}

/// One call; "" when it returned 0 and (cuda) the device reports no error.
std::string call(KfForward fn, std::vector<kf_tensor>& in, std::vector<kf_tensor>& out, int device) {
  int rc = fn(in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), nullptr);
  if (rc != 0) return "kf_forward returned " + std::to_string(rc);
#ifdef KFORGE_HOST_CUDA
  if (device >= 0)
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return cudaGetErrorName(e);
#else
  (void)device;
#endif
  return "";
}

}  // namespace

int profile_main(const std::string& artifact, int device, const std::string& tensor_file) {
  ::dup2(2, 3);  // a seccomp violation is reported on fd 3: here, stderr
  std::ifstream f(tensor_file, std::ios::binary);
  std::vector<TensorLine> lines;
  std::string e = f ? read_header(f, &lines) : "cannot open";
  // Started ahead of its turn by the profile step: no CUDA call before it holds the device
  // (profile_gate.hpp).
  if (!kforge::backends::wait_for_profile_gate()) {
    std::fprintf(stderr, "kforge-host --profile: the profile gate never opened\n");
    return 2;
  }
#ifdef KFORGE_HOST_CUDA
  if (e.empty() && device >= 0 && (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess))
    e = std::string("cuda init: ") + cudaGetErrorString(cudaGetLastError());
#endif
  if (e.empty()) e = place(f, device, &lines);
  if (!e.empty()) {
    std::fprintf(stderr, "kforge-host --profile: %s: %s\n", tensor_file.c_str(), e.c_str());
    return 2;
  }
  std::vector<kf_tensor> in, out;
  for (const auto& tl : lines) (tl.input ? in : out).push_back(tl.t);
  KfForward fn = nullptr;
  const char* scratch = std::getenv("KFORGE_PROFILE_SCRATCH");
  if (e = confine_and_load(artifact, device, scratch ? scratch : "", &fn); e.empty())
    e = call(fn, in, out, device);  // untimed
#ifdef KFORGE_HOST_CUDA
  if (e.empty() && device >= 0) cudaProfilerStart();
#endif
  if (e.empty()) e = call(fn, in, out, device);  // the profiled call
#ifdef KFORGE_HOST_CUDA
  if (device >= 0) cudaProfilerStop();
#endif
  if (!e.empty()) {
    std::fprintf(stderr, "kforge-host --profile: %s\n", e.c_str());
    return 1;
  }
  std::printf("kforge-host: profiled one call\n");
  return 0;
}

}  // namespace kforge::host
