// The memory the judge shares with a candidate host (exchange.hpp).
#include "exchange.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

namespace kforge::runner {

namespace {
constexpr int64_t kAlign = 256;
constexpr int64_t kOutputGap = 64 << 10;  ///< canary bytes before, between and after outputs
constexpr uint8_t kCanary = 0xA5;

int64_t align_up(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

int64_t bytes_of(const TensorSpec& s) {
  int64_t n = 1;
  for (auto d : s.shape) n *= d;
  return n * static_cast<int64_t>(c10::elementSize(scalar_type_of(s.dtype)));
}

bool is_model_state(const TensorSpec& s) {
  return s.kind == "parameter" || s.kind == "buffer";
}

bool all_finite(const std::vector<HeldTensor>& ts) {
  for (const auto& h : ts)
    if ((at::isFloatingType(h.t.scalar_type()) || at::isComplexType(h.t.scalar_type())) &&
        !h.t.isfinite().all().item<bool>())
      return false;
  return true;
}

Exchange::Exchange(const at::Device& device, const std::vector<TensorSpec>& in_specs,
                   const std::vector<bool>& in_on_host, const std::vector<TensorSpec>& out_specs, int sets)
    : device_(device),
      in_specs_(in_specs),
      out_specs_(out_specs),
      in_on_host_(in_on_host),
      sets_(sets),
      arenas_(3) {
  const bool cuda = device.is_cuda();
  auto arena_of_input = [&](std::size_t i) { return cuda && !in_on_host_.at(i) ? 0 : 1; };
  // Plan: offsets per arena, parameters once, then every set's inputs and outputs.
  int64_t size[3] = {0, 0, kOutputGap};
  std::vector<std::vector<std::pair<int, int64_t>>> in_at(sets), out_at(sets);
  std::vector<std::pair<int, int64_t>> param_at(in_specs.size(), {-1, 0});
  for (std::size_t i = 0; i < in_specs.size(); ++i)
    if (is_model_state(in_specs[i])) {
      int a = arena_of_input(i);
      param_at[i] = {a, size[a]};
      size[a] = align_up(size[a] + bytes_of(in_specs[i]));
    }
  for (int k = 0; k < sets; ++k) {
    for (std::size_t i = 0; i < in_specs.size(); ++i) {
      if (is_model_state(in_specs[i])) {
        in_at[k].push_back(param_at[i]);
        continue;
      }
      int a = arena_of_input(i);
      in_at[k].push_back({a, size[a]});
      size[a] = align_up(size[a] + bytes_of(in_specs[i]));
    }
    for (const auto& s : out_specs) {
      out_at[k].push_back({2, size[2]});
      out_regions_.push_back({size[2], size[2] + bytes_of(s)});
      size[2] = align_up(size[2] + bytes_of(s)) + kOutputGap;
    }
  }
  for (int a = 0; a < 3; ++a) {
    // Whole 2 MiB pages: a CUDA IPC handle maps the allocation's whole underlying block, so
    // nothing else of the judge's may share it.
    if (size[a] > 0) size[a] = (size[a] + (2 << 20) - 1) / (2 << 20) * (2 << 20);
    arenas_[a].bytes = size[a];
    if (size[a] == 0) continue;
    allocate(arenas_[a], a == 0 || (a == 2 && cuda), a == 1);
  }
  auto view = [&](std::pair<int, int64_t> at_, const TensorSpec& s) {
    const Arena& ar = arenas_[at_.first];
    auto opts =
        at::TensorOptions().dtype(scalar_type_of(s.dtype)).device(ar.device ? device_ : at::Device(at::kCPU));
    return Placed{at_.first, at_.second, at::from_blob(ar.base + at_.second, s.shape, opts)};
  };
  in_.resize(sets);
  out_.resize(sets);
  for (int k = 0; k < sets; ++k) {
    for (std::size_t i = 0; i < in_specs.size(); ++i) in_[k].push_back(view(in_at[k][i], in_specs[i]));
    for (std::size_t j = 0; j < out_specs.size(); ++j) out_[k].push_back(view(out_at[k][j], out_specs[j]));
  }
  // Canary bytes over the whole output arena; outputs are poisoned before each use.
  if (arenas_[2].bytes > 0) {
#ifdef KFORGE_RUNNER_CUDA
    if (arenas_[2].device) {
      cudaMemset(arenas_[2].base, kCanary, static_cast<std::size_t>(arenas_[2].bytes));
      cudaDeviceSynchronize();
    } else
#endif
      std::memset(arenas_[2].base, kCanary, static_cast<std::size_t>(arenas_[2].bytes));
  }
}

void Exchange::allocate(Arena& a, bool device, bool read_only) {
  a.device = device;
  a.read_only = read_only;
  if (device) {
#ifdef KFORGE_RUNNER_CUDA
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, static_cast<std::size_t>(a.bytes));
    if (e != cudaSuccess) {  // PyTorch's caching allocator may hold what is needed: give it back, retry
      cudaGetLastError();
      release_cached_memory();
      e = cudaMalloc(&p, static_cast<std::size_t>(a.bytes));
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("exchange: cudaMalloc of " + std::to_string(a.bytes) +
                               " bytes failed: " + cudaGetErrorString(e));
    }
    a.base = static_cast<char*>(p);
    return;
#else
    throw std::runtime_error("exchange: this kforge-runner has no CUDA");
#endif
  }
  a.fd = ::memfd_create("kforge-exchange", MFD_CLOEXEC);
  if (a.fd < 0 || ::ftruncate(a.fd, a.bytes) != 0)
    throw std::runtime_error(std::string("exchange: memfd: ") + std::strerror(errno));
  void* p = ::mmap(nullptr, static_cast<std::size_t>(a.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
  if (p == MAP_FAILED) throw std::runtime_error(std::string("exchange: mmap: ") + std::strerror(errno));
  a.base = static_cast<char*>(p);
  // The host gets a descriptor opened read-only: it cannot map the inputs writable, nor
  // mprotect them so, nor ftruncate them.
  const std::string self = "/proc/self/fd/" + std::to_string(a.fd);
  a.ro_fd = read_only ? ::open(self.c_str(), O_RDONLY | O_CLOEXEC) : a.fd;
  if (a.ro_fd < 0)
    throw std::runtime_error(std::string("exchange: reopen read-only: ") + std::strerror(errno));
}

Exchange::~Exchange() {
  in_.clear();
  out_.clear();
  for (Arena& a : arenas_) {
    if (!a.base) continue;
    if (a.device) {
#ifdef KFORGE_RUNNER_CUDA
      cudaFree(a.base);
#endif
    } else {
      ::munmap(a.base, static_cast<std::size_t>(a.bytes));
      if (a.ro_fd >= 0 && a.ro_fd != a.fd) ::close(a.ro_fd);
      ::close(a.fd);
    }
  }
}

at::Tensor Exchange::in(int k, std::size_t i) const {
  return in_.at(k).at(i).view;
}
at::Tensor Exchange::out(int k, std::size_t j) const {
  return out_.at(k).at(j).view;
}

std::vector<int> Exchange::host_fds() const {
  std::vector<int> fds;
  for (const Arena& a : arenas_)
    if (a.base && !a.device) fds.push_back(a.ro_fd);
  return fds;
}

std::vector<std::string> Exchange::host_lines(int first_fd) const {
  std::vector<std::string> lines;
  int fd = first_fd;
  for (std::size_t a = 0; a < arenas_.size(); ++a) {
    const Arena& ar = arenas_[a];
    if (!ar.base) continue;
    std::string l = "arena " + std::to_string(a) + " " + std::to_string(ar.bytes);
    if (ar.device) {
#ifdef KFORGE_RUNNER_CUDA
      cudaIpcMemHandle_t h{};
      if (cudaIpcGetMemHandle(&h, ar.base) != cudaSuccess)
        throw std::runtime_error("exchange: cudaIpcGetMemHandle failed");
      static const char* hex = "0123456789abcdef";
      std::string s;
      for (char c : h.reserved) {
        auto b = static_cast<unsigned char>(c);
        s += hex[b >> 4];
        s += hex[b & 15];
      }
      l += " dev " + s;
#endif
    } else {
      l += " host " + std::to_string(fd++) + (ar.read_only ? " ro" : " rw");
    }
    lines.push_back(l);
  }
  int id = 0;
  for (int k = 0; k < sets_; ++k) {
    std::string set = "set " + std::to_string(k) + " " + std::to_string(in_[k].size());
    std::string outs = " " + std::to_string(out_[k].size());
    auto add = [&](const Placed& p, std::string* list) {
      std::string l = "tensor " + std::to_string(id) + " " + std::to_string(p.arena) + " " +
                      std::to_string(p.offset) + " " + std::to_string(to_kf_dtype(p.view.scalar_type())) +
                      " " + std::to_string(p.view.dim());
      for (auto d : p.view.sizes()) l += " " + std::to_string(d);
      lines.push_back(l);
      *list += " " + std::to_string(id++);
    };
    for (const Placed& p : in_[k]) add(p, &set);
    for (const Placed& p : out_[k]) add(p, &outs);
    lines.push_back(set + outs);
  }
  return lines;
}

void Exchange::poison(int k) {
  for (auto& p : out_.at(k)) poison_fill(p.view);
}

bool Exchange::canaries_intact() const {
  const Arena& a = arenas_[2];
  if (!a.base) return true;
  auto opts = at::TensorOptions().dtype(at::kByte).device(a.device ? device_ : at::Device(at::kCPU));
  at::Tensor all = at::from_blob(a.base, {a.bytes}, opts);
  int64_t at_ = 0;
  for (const auto& [b, e] : out_regions_) {
    if (b > at_ && !all.narrow(0, at_, b - at_).eq(kCanary).all().item<bool>()) return false;
    at_ = e;
  }
  return at_ >= a.bytes || all.narrow(0, at_, a.bytes - at_).eq(kCanary).all().item<bool>();
}

int64_t Exchange::bytes() const {
  int64_t b = 0;
  for (const Arena& a : arenas_) b += a.bytes;
  return b;
}

}  // namespace kforge::runner
