// kforge-host: the candidate host (docs/judge.md). One process per candidate, started by the
// judge (kforge-runner) for one check or one bench and never reused. It links no Python, no
// LibTorch and no vendor library: there is nothing of the judge's to call into. It maps the
// tensors the judge shares with it, confines itself (kforge/sandbox/confine.hpp), loads the
// candidate's artifact, calls kf_forward when told to and answers on its own channel.
//
// Nothing it says is trusted: the judge reads the outputs itself, times the calls with its
// own clock from outside this process, and checks everything on data it kept private. The
// replies only say "I think I am done", and how a call failed when it did.
//
// File descriptors at start: 0 /dev/null, 1 and 2 a capped log, 3 the channel (a socket),
// further ones the shared host-memory arenas named by `arena` lines. Everything else is
// closed before anything is read.
//
// Channel protocol (one line each way, fields separated by spaces; replies in order):
//   arena <i> <bytes> dev <cudaIpcMemHandle hex>     -> ok | err <kind> <text>
//   arena <i> <bytes> host <fd> ro|rw                 -> ok | err ...
//   tensor <id> <arena> <offset bytes> <kf_dtype> <ndim> <size>...   (contiguous)  -> ok
//   set <k> <n_in> <tensor id>... <n_out> <tensor id>...                          -> ok
//   touch   a 4-byte memset on the device, waited for -> touched
//   load                                              -> ok | err load|entry_point|confine <text>
//   run <seq> [<set> ...]         calls kf_forward on each set back to back, then waits for the
//                                 device        -> done <seq> <rc> <cuda error name or ->
//                                 (no sets: the fixed work of a run, a 4-byte memset on the
//                                 device included, for the judge's calibration)
// The judge freezes this process (SIGSTOP) the moment it reads "done": nothing runs after the
// reply until the judge resumes it, inside its next timed or checked window.
//   call <seq> <entry> <n_in> <tensor id>... <n_out> <tensor id>... <n_args> <arg>...
//                                 an ATen-operator entry (`<op>_kernel_impl`, kernel_abi.h) on
//                                 those tensors and kf_args: the confined mode of an exported
//                                 backend package (benchmarks/backend/confined.py; the judge
//                                 never sends it) -> done <seq> <rc> <cuda error name or ->
//                                 each arg `<kind>:<name hex>:<payload>`, kind t (tensor: index
//                                 into the call's inputs), i (int), f (double, strtod's form), b
//                                 (0/1), n (None), l (ints, comma-separated), L (input indices,
//                                 comma-separated), o (text hex)
//   quit                                              -> (exits 0)
// A seccomp violation writes "violation <syscall nr>" and exits with kViolationExit.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host.hpp"
#include "kforge/kernel_abi.h"
#include "kforge/sandbox/confine.hpp"
#include "line_channel.hpp"

#ifdef KFORGE_HOST_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using kforge::host::kChannel;

kforge::host::LineChannel& channel() {
  static kforge::host::LineChannel ch(kChannel);
  return ch;
}

/// One line to the judge; a channel that cannot be written ends the host.
void reply(const std::string& s) {
  if (!channel().write_line(s)) std::_Exit(2);
}

}  // namespace

namespace {
using kforge::host::elem_size;
using kforge::host::KfForward;

struct Arena {
  char* base = nullptr;
  int64_t bytes = 0;
  int device = -1;  ///< -1: host memory
};

class Host {
 public:
  Host(int artifact_fd, int device) : artifact_fd_(artifact_fd), device_(device) {}

  /// Before anything arrives: the device context, so that the driver's own files and threads
  /// exist before the process is confined.
  std::string init() {
#ifdef KFORGE_HOST_CUDA
    if (device_ >= 0) {
      if (cudaSetDevice(device_) != cudaSuccess || cudaFree(nullptr) != cudaSuccess)
        return std::string("cuda init: ") + cudaGetErrorString(cudaGetLastError());
      if (cudaStreamCreate(&stream_) != cudaSuccess) return "cudaStreamCreate failed";
      if (cudaMalloc(&touch_buf_, 4) != cudaSuccess) return "cudaMalloc failed";
    }
#else
    if (device_ >= 0) return "this kforge-host was built without CUDA";
#endif
    return "";
  }

  std::string handle(const std::string& line) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "arena") return arena(in);
    if (cmd == "tensor") return tensor(in);
    if (cmd == "set") return set(in);
    if (cmd == "touch") return touch();
    if (cmd == "load") return load();
    if (cmd == "run") return run(in);
    if (cmd == "call") return call(in);
    return "err protocol unknown command " + cmd;
  }

 private:
  std::string arena(std::istringstream& in) {
    int i = -1;
    Arena a;
    std::string where;
    in >> i >> a.bytes >> where;
    if (where == "host") {
      int fd = -1;
      std::string mode;
      in >> fd >> mode;
      int prot = mode == "rw" ? PROT_READ | PROT_WRITE : PROT_READ;
      void* p = ::mmap(nullptr, static_cast<std::size_t>(a.bytes), prot, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) return std::string("err setup mmap: ") + std::strerror(errno);
      ::close(fd);  // the mapping stays; the descriptor is not needed any more
      a.base = static_cast<char*>(p);
    } else {
#ifdef KFORGE_HOST_CUDA
      std::string hex;
      in >> hex;
      cudaIpcMemHandle_t h{};
      if (hex.size() != 2 * sizeof h.reserved) return "err setup bad ipc handle";
      for (std::size_t k = 0; k < sizeof h.reserved; ++k)
        h.reserved[k] = static_cast<char>(std::stoi(hex.substr(2 * k, 2), nullptr, 16));
      void* p = nullptr;
      cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess) return std::string("err setup cudaIpcOpenMemHandle: ") + cudaGetErrorString(e);
      a.base = static_cast<char*>(p);
      a.device = device_;
#else
      return "err setup no CUDA in this host";
#endif
    }
    arenas_[i] = a;
    return "ok";
  }

  std::string tensor(std::istringstream& in) {
    int id = -1, arena = -1;
    int64_t offset = 0;
    kf_tensor t{};
    in >> id >> arena >> offset >> t.dtype >> t.ndim;
    if (!arenas_.count(arena) || t.ndim < 0 || t.ndim > KF_MAX_DIMS) return "err setup bad tensor line";
    int64_t numel = 1;
    for (int d = 0; d < t.ndim; ++d) {
      in >> t.sizes[d];
      numel *= t.sizes[d];
    }
    int64_t stride = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      t.strides[d] = stride;
      stride *= t.sizes[d];
    }
    const Arena& a = arenas_[arena];
    if (offset < 0 || offset + numel * elem_size(t.dtype) > a.bytes)
      return "err setup tensor outside its arena";
    t.data = a.base + offset;
    t.device = a.device;
    tensors_[id] = t;
    return "ok";
  }

  std::string set(std::istringstream& in) {
    int k = -1, n = 0;
    in >> k >> n;
    Set s;
    for (int i = 0, id = 0; i < n && in >> id; ++i) s.in.push_back(tensors_.at(id));
    in >> n;
    for (int i = 0, id = 0; i < n && in >> id; ++i) s.out.push_back(tensors_.at(id));
    sets_[k] = std::move(s);
    return "ok";
  }

  std::string load() {
    std::string e = kforge::host::confine_and_load(artifact_fd_, device_, "", &fn_);
    // The artifact's own handle, for `call`'s operator entries: found by the name it was loaded
    // under (RTLD_NOLOAD opens nothing).
    if (Dl_info info{}; e.empty() && ::dladdr(reinterpret_cast<void*>(fn_), &info) && info.dli_fname)
      handle_ = ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    return e.empty() ? "ok" : "err " + e;
  }

  /// A 4-byte memset on the host's stream, waited for: the GPU is running this process's
  /// context when the judge's clock starts (a switch from the judge's context would be timed).
  std::string touch() {
#ifdef KFORGE_HOST_CUDA
    if (device_ >= 0 && (cudaMemsetAsync(touch_buf_, 0, 4, stream_) != cudaSuccess ||
                         cudaStreamSynchronize(stream_) != cudaSuccess))
      return "err touch";
#endif
    return "touched";
  }

  std::string run(std::istringstream& in) {
    std::string seq;
    in >> seq;
    int rc = 0, k = 0;
    const char* cuda_error = "-";
#ifdef KFORGE_HOST_CUDA
    // A run of no sets (the judge's calibration) still puts work on the device, so that the GPU
    // switches to this context and back as in a run of kernels.
    if (in.peek() == EOF && device_ >= 0) cudaMemsetAsync(touch_buf_, 0, 4, stream_);
#endif
    while (rc == 0 && in >> k) {
      auto it = sets_.find(k);
      if (it == sets_.end() || !fn_) return "err protocol no such set or nothing loaded";
      Set& s = it->second;
      rc = fn_(s.in.data(), static_cast<int>(s.in.size()), s.out.data(), static_cast<int>(s.out.size()),
               stream_);
#ifdef KFORGE_HOST_CUDA
      if (device_ >= 0)
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
          cuda_error = cudaGetErrorName(e);
          break;
        }
#endif
    }
#ifdef KFORGE_HOST_CUDA
    if (device_ >= 0 && std::strcmp(cuda_error, "-") == 0)
      if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) cuda_error = cudaGetErrorName(e);
#endif
    return "done " + seq + " " + std::to_string(rc) + " " + cuda_error;
  }

  /// One kf_arg from `<kind>:<name hex>:<payload>`; its text lives in `keep`. False when malformed.
  static bool parse_arg(const std::string& tok, kf_arg* a, std::vector<std::string>& keep,
                        std::vector<std::vector<int64_t>>& lists) {
    const auto c1 = tok.find(':'), c2 = c1 == std::string::npos ? c1 : tok.find(':', c1 + 1);
    if (c1 != 1 || c2 == std::string::npos) return false;
    auto unhex = [](const std::string& h, std::string* out) {
      if (h.size() % 2) return false;
      for (std::size_t k = 0; k < h.size(); k += 2) {
        char* end = nullptr;
        const std::string byte = h.substr(k, 2);
        out->push_back(static_cast<char>(std::strtol(byte.c_str(), &end, 16)));
        if (*end) return false;
      }
      return true;
    };
    std::string name, text;
    const std::string payload = tok.substr(c2 + 1);
    if (!unhex(tok.substr(2, c2 - 2), &name)) return false;
    keep.push_back(name);
    a->name = keep.back().c_str();
    switch (tok[0]) {
      case 't':
        a->kind = KF_ARG_TENSOR, a->tensor = std::atoi(payload.c_str());
        return true;
      case 'i':
        a->kind = KF_ARG_INT, a->i = std::strtoll(payload.c_str(), nullptr, 10);
        return true;
      case 'b':
        a->kind = KF_ARG_BOOL, a->i = payload == "1";
        return true;
      case 'f':
        a->kind = KF_ARG_FLOAT, a->f = std::strtod(payload.c_str(), nullptr);
        return true;
      case 'n':
        a->kind = KF_ARG_NONE;
        return true;
      case 'l':
      case 'L': {
        lists.emplace_back();
        std::istringstream ls(payload);
        for (std::string v; std::getline(ls, v, ',');)
          lists.back().push_back(std::strtoll(v.c_str(), nullptr, 10));
        a->kind = tok[0] == 'l' ? KF_ARG_INTS : KF_ARG_TENSORS;
        a->n = static_cast<int32_t>(lists.back().size());
        a->ints = lists.back().data();
        return true;
      }
      case 'o':
        if (!unhex(payload, &text)) return false;
        keep.push_back(text);
        a->kind = KF_ARG_OTHER, a->text = keep.back().c_str();
        return true;
      default:
        return false;
    }
  }

  /// `call`: the named operator entry of the loaded artifact on the given tensors and args.
  std::string call(std::istringstream& in) {
    std::string seq, entry;
    int n = 0;
    in >> seq >> entry;
    // Only an operator entry (kernel_abi.h's `<op>_kernel_impl`): no other symbol is callable.
    const std::string suffix = "_kernel_impl";
    if (!handle_ || entry.size() <= suffix.size() ||
        entry.compare(entry.size() - suffix.size(), suffix.size(), suffix) ||
        entry.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
            std::string::npos)
      return "err protocol bad entry or nothing loaded";
    using Entry = int (*)(const kf_tensor*, int, kf_tensor*, int, const kf_arg*, int, void*);
    auto fn = reinterpret_cast<Entry>(::dlsym(handle_, entry.c_str()));
    if (!fn) return "err entry_point the artifact exports no " + entry;
    std::vector<kf_tensor> ins, outs;
    in >> n;
    for (int i = 0, id = 0; i < n && in >> id; ++i)
      if (tensors_.count(id)) ins.push_back(tensors_[id]);
    in >> n;
    for (int i = 0, id = 0; i < n && in >> id; ++i)
      if (tensors_.count(id)) outs.push_back(tensors_[id]);
    std::vector<std::string> keep;
    std::vector<std::vector<int64_t>> lists;
    keep.reserve(128), lists.reserve(64);
    std::vector<kf_arg> args;
    in >> n;
    if (n < 0 || n > 64) return "err protocol too many args";
    std::string tok;
    for (int i = 0; i < n && in >> tok; ++i) {
      kf_arg a{};
      if (!parse_arg(tok, &a, keep, lists)) return "err protocol bad arg " + tok;
      args.push_back(a);
    }
    const int rc = fn(ins.data(), static_cast<int>(ins.size()), outs.data(), static_cast<int>(outs.size()),
                      args.data(), static_cast<int>(args.size()), stream_);
    return "done " + seq + " " + std::to_string(rc) + " -";
  }

  struct Set {
    std::vector<kf_tensor> in, out;
  };
  int artifact_fd_;  ///< the judge's sealed copy of the artifact (candidate_host.hpp)
  int device_;
  std::map<int, Arena> arenas_;
  std::map<int, kf_tensor> tensors_;
  std::map<int, Set> sets_;
  KfForward fn_ = nullptr;
  void* handle_ = nullptr;  ///< the artifact's dlopen handle, once loaded
#ifdef KFORGE_HOST_CUDA
  cudaStream_t stream_ = nullptr;
  void* touch_buf_ = nullptr;
#else
  void* stream_ = nullptr;
#endif
};

}  // namespace

int main(int argc, char** argv) {
  // usage: kforge-host <artifact> <device: -1 cpu, N cuda ordinal> <first fd to close>
  //        (the artifact's name, for messages; its bytes are the sealed memfd on the
  //        descriptor just below <first fd to close>)
  //        kforge-host --profile <artifact> <device> <tensor file>   (profile_mode.cpp)
  if (argc == 5 && std::string(argv[1]) == "--profile")
    return kforge::host::profile_main(argv[2], std::atoi(argv[3]), argv[4]);
  if (argc != 4) return 2;
  // Nothing but what the judge gave: close every descriptor above the arenas it passed.
  ::close_range(static_cast<unsigned>(std::atoi(argv[3])), ~0U, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // no other process of this user reads its memory
  if (::getppid() == 1) return 2;        // the judge is already gone
  Host host(std::atoi(argv[3]) - 1, std::atoi(argv[2]));
  if (std::string e = host.init(); !e.empty()) {
    reply("err init " + e);
    return 3;
  }
  reply("ready");
  std::string line;
  while (channel().read_line(&line)) {
    if (line == "quit") break;
    reply(host.handle(line));
  }
  return 0;
}
