// backends/judge/exchange.hpp — the tensors the judge shares with one candidate host
// (internal to kforge-runner; docs/judge.md).
//
// An Exchange owns memory that both sides map: device memory exported with CUDA IPC
// (cudaMalloc'd here, outside PyTorch's caching allocator, so that the handle covers exactly
// this allocation), and host memory in memfds (inputs handed over read-only, outputs
// read-write). It holds `sets` copies of the task's inputs and outputs (the bench rotates
// them) and one copy of the parameters and buffers, shared by every set. The judge writes
// inputs into it from its own pristine tensors and reads outputs back; it never runs the
// reference on it. Output arenas are filled with a canary byte outside the outputs, so a
// write beyond an output is seen. Single-threaded, like the runner.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "runner.hpp"

namespace kforge::runner {

class Exchange {
 public:
  /// `in_specs`: inputs then parameters/buffers (kind "parameter"/"buffer" are shared by all
  /// sets); `in_on_host[i]`: input i lives in host memory (a number from get_inputs() on a cuda
  /// task). Throws std::runtime_error when memory cannot be had (the caller reports infra_error).
  Exchange(const at::Device& device, const std::vector<TensorSpec>& in_specs,
           const std::vector<bool>& in_on_host, const std::vector<TensorSpec>& out_specs, int sets);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  int sets() const { return sets_; }
  /// The judge's view of input i of set k (parameters: the one shared copy).
  at::Tensor in(int k, std::size_t i) const;
  at::Tensor out(int k, std::size_t j) const;
  std::size_t n_in() const { return in_specs_.size(); }
  std::size_t n_out() const { return out_specs_.size(); }

  /// Lines that describe the arenas, tensors and sets to kforge-host (its protocol), given the
  /// descriptor numbers the host will see for host_fds(), in order.
  std::vector<std::string> host_lines(int first_fd) const;
  /// The judge's descriptors to hand to the host (read-only for inputs), in order.
  std::vector<int> host_fds() const;

  /// Fills the outputs of set k with the poison pattern (NaN with a payload, sentinels).
  void poison(int k);
  /// True when no byte of the output arena outside the outputs changed since construction.
  bool canaries_intact() const;
  /// Bytes of memory this exchange holds.
  int64_t bytes() const;

 private:
  struct Arena {
    char* base = nullptr;
    int64_t bytes = 0;
    bool device = false;
    int fd = -1;     ///< memfd (host arenas)
    int ro_fd = -1;  ///< a read-only descriptor of the memfd, for the host
    bool read_only = false;
  };
  struct Placed {
    int arena;
    int64_t offset;
    at::Tensor view;
  };
  void allocate(Arena& a, bool device, bool read_only);

  at::Device device_;
  std::vector<TensorSpec> in_specs_, out_specs_;
  std::vector<bool> in_on_host_;
  int sets_;
  std::vector<Arena> arenas_;                             ///< 0: device inputs, 1: host inputs, 2: outputs
  std::vector<std::vector<Placed>> in_, out_;             ///< [set][tensor]
  std::vector<std::pair<int64_t, int64_t>> out_regions_;  ///< [begin, end) of every output
};

/// Returns the blocks PyTorch's caching allocator holds unused to the device
/// (torch.cuda.empty_cache(); python_reference.cpp).
void release_cached_memory();

/// Fills t with the poison bit pattern of its dtype (tensor_check.cpp).
void poison_fill(at::Tensor& t);

}  // namespace kforge::runner
