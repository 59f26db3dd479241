// kforge-runner: the judge's warm worker (docs/judge.md). One process per device; reads
// one JSON request per line on stdin, writes one JSON reply per line (protocol, typed at both
// ends: backends/client/include/kforge/backends/runner_protocol.hpp; every reply echoes the request's id).
// It holds the reference, the inputs, the tolerances and the clock; candidate code never
// runs in it: checks and benches start a fresh kforge-host per candidate (check.cpp,
// bench.cpp, testblock.cpp).
//
// The protocol streams are moved to private file descriptors at start-up (close-on-exec, so
// no candidate host inherits them), and fd 1 is pointed at stderr.
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <torch/version.h>
#include <ucontext.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "judge.hpp"
#include "kforge/backends/profile_gate.hpp"
#include "runner.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

using json = nlohmann::json;
namespace py = pybind11;
namespace protocol = kforge::backends::protocol;
using kforge::backends::JudgeError;
using namespace kforge::runner;

namespace {

using Clock = std::chrono::steady_clock;

int g_out_fd = -1;
FILE* g_in = nullptr;

void reply(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(g_out_fd, p, left);
    if (n <= 0) std::_Exit(2);
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string python_traceback(py::error_already_set& e) {
  try {
    auto tb = py::module_::import("traceback");
    py::list lines = tb.attr("format_exception")(e.type(), e.value(), e.trace());
    std::string s;
    for (auto l : lines) s += l.cast<std::string>();
    return s;
  } catch (...) {
    return e.what();
  }
}

/// The wire form of a reply the judge built as JSON (check, bench, testblock): sent through its
/// protocol type, so that it is what the client decodes; one that does not fit is a protocol error.
template <class R>
json typed(const json& built) {
  if (auto e = protocol::error_reply(built)) return protocol::encode(*e);
  kforge::Expected<R> r = protocol::decode_reply<R>(built);
  if (!r)
    return protocol::encode(
        protocol::ErrorReply{JudgeError::protocol, "the judge's own " + r.failure().message});
  return protocol::encode(r.value());
}

json error(JudgeError e, std::string message) {
  return protocol::encode(protocol::ErrorReply{e, std::move(message)});
}

class Worker {
 public:
  json handle(const protocol::Request& req) {
    if (req.command() != protocol::Command::bench)
      session_.reset();  // a passed candidate's host lives only until its bench
    // The client holds the device's timed lock for this whole request (bench, peaks, ...).
    lock_held_by_client_ = req.timed_lock_held;
    lock_shared_by_client_ = req.timed_lock_shared;  // a check: untimed work
    json r;
    try {
      r = std::visit([&](const auto& body) { return on(body); }, req.body);
    } catch (const UnjudgeableReference& e) {
      r = error(JudgeError::unjudgeable, e.what());
    } catch (py::error_already_set& e) {
      r = error(JudgeError::python_exception, python_traceback(e));
    } catch (const std::exception& e) {
      r = error(JudgeError::runner, e.what());
    }
    if (!req.id.empty()) r["id"] = req.id;
    return r;
  }

  /// Work done after a reply while the client has its own (the first compiles follow the
  /// start-up requests): the first use of PyTorch's FLOP counter (count_flops at `load`, for
  /// suites that declare no FLOPs). Its first TorchDispatchMode imports torch._dynamo (PyTorch
  /// wraps every mode's dispatch in _disable_dynamo): about 1.2 s once per process, which `load`
  /// would otherwise add to the first attempt. Done only when no request follows within 50 ms
  /// (the client asks one request at a time, so `in_fd` readable means one waits; `peaks` follows
  /// `prewarm` at once), and under the device's lock held shared (timed_lock.hpp: untimed work),
  /// not while another runner's timed work holds it: then it waits for the next reply. Host-only
  /// work on a tiny CPU tensor; errors are ignored (count_flops answers 0 where it cannot run).
  void after_reply(int in_fd) {
    if (!warm_flop_counter_) return;
    pollfd p{in_fd, POLLIN, 0};
    if (::poll(&p, 1, 50) != 0) return;  // a request waits (or the stream ended)
    kforge::backends::TimedHold hold = timed_lock_.acquire(
        lock_name(device_), "warm", std::chrono::milliseconds(0), kforge::backends::TimedLock::Mode::shared);
    if (hold.state() == kforge::backends::TimedHold::State::busy) return;
    warm_flop_counter_ = false;
    try {
      py::exec(R"PY(
import torch
from torch.utils.flop_counter import FlopCounterMode
with FlopCounterMode(display=False):
    torch.relu(torch.zeros(4))
)PY",
               py::dict());
    } catch (py::error_already_set&) {
    }
  }

 private:
  json on(const protocol::HelloRequest&) { return protocol::encode(hello()); }
  json on(const protocol::LoadRequest& q) { return protocol::encode(load(q)); }
  json on(const protocol::ReferenceRequest& q) { return reference(q); }
  json on(const protocol::CheckRequest& q) { return typed<protocol::CheckReply>(check(q)); }
  json on(const protocol::BenchRequest& q) { return typed<protocol::BenchReply>(bench(q)); }
  json on(const protocol::PeaksRequest& q) { return protocol::encode(peaks(q)); }
  json on(const protocol::PrewarmRequest& q) { return protocol::encode(prewarm(q)); }
  json on(const protocol::ProfileSetupRequest& q) {
    return protocol::encode(profile_setup(cur().task, cur().load_request, q, judge_context(), self_exe()));
  }
  json on(const protocol::TestblockRequest& q) { return typed<protocol::CheckReply>(testblock(q)); }
  json on(const protocol::TritonBenchRequest& q) { return protocol::encode(triton_bench(q)); }
  json on(const protocol::QuitRequest&) {
    return error(JudgeError::protocol, "quit: not a request to answer");
  }

  /// A loaded task: the reference model, its parameters and the tensor specs. The worker keeps
  /// the most recently used few (KFORGE_RUNNER_TASKS, default 8; at most
  /// KFORGE_RUNNER_TASK_MB MiB of parameters and buffers, default 8192), so an agent that
  /// interleaves tasks does not rebuild a model for every candidate.
  struct Loaded {
    LoadedTask task;
    protocol::LoadReply reply;  ///< the load reply, without load_ms
    protocol::LoadRequest
        load_request;  ///< what loaded it (the profile step's reference process loads it again)
    int64_t param_bytes = 0;
    uint64_t last_use = 0;
  };
  std::map<std::string, std::unique_ptr<Loaded>> tasks_;  ///< key: task, device, seed, source, formulas
  /// Triton hosts forked warm (zygote.hpp); null with KFORGE_TRITON_ZYGOTE=0. Outlives session_.
  std::unique_ptr<Zygotes> zygotes_ =
      Zygotes::enabled_by_environment() ? std::make_unique<Zygotes>() : nullptr;
  std::unique_ptr<CandidateSession> session_;  ///< the last passed check's host, for its bench
  bool warm_flop_counter_ = false;             ///< after_reply has the FLOP counter's first use to do
  mutable kforge::backends::FlockTimedLock timed_lock_;  ///< the devices' locks for timed work
  bool lock_held_by_client_ = false;                     ///< the current request runs under the client's hold
  bool lock_shared_by_client_ = false;                   ///< ...under its shared hold
  std::map<std::string, Measured> peak_bytes_per_s_;     ///< device -> measured peak bandwidth (bytes/s)
  Loaded* cur_ = nullptr;                                ///< the task check/bench use; null: none
  uint64_t use_clock_ = 0;
  at::Device device_{at::kCPU};
  int current_cuda_ = -1;  ///< the current CUDA device set by use_device; -1: none yet

  static long env_long(const char* name, long fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::max(1L, std::strtol(v, nullptr, 10)) : fallback;
  }

  Loaded& cur() {
    if (!cur_) throw std::runtime_error("no task loaded (send a successful `load` first)");
    return *cur_;
  }
  void require_task() { (void)cur(); }

  /// Drops least recently used tasks other than `keep` until at most `max_tasks` are held and
  /// their parameters fit in the byte cap.
  void evict(std::size_t max_tasks, const Loaded* keep) {
    const int64_t cap = env_long("KFORGE_RUNNER_TASK_MB", 8192) << 20;
    for (;;) {
      int64_t bytes = 0;
      for (const auto& [k, t] : tasks_) bytes += t->param_bytes;
      if (tasks_.size() <= max_tasks && bytes <= cap) return;
      auto victim = tasks_.end();
      for (auto it = tasks_.begin(); it != tasks_.end(); ++it)
        if (it->second.get() != keep &&
            (victim == tasks_.end() || it->second->last_use < victim->second->last_use))
          victim = it;
      if (victim == tasks_.end()) return;
      if (victim->second.get() == cur_) cur_ = nullptr;
      tasks_.erase(victim);
    }
  }

  bool cuda() const { return device_.is_cuda(); }

  void sync() { sync_device(device_); }

  protocol::HelloReply hello() {
    protocol::HelloReply j;
    j.libtorch = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                 std::to_string(TORCH_VERSION_PATCH);
    auto torch = py::module_::import("torch");
    j.torch = py::str(torch.attr("__version__")).cast<std::string>();
    j.python = py::str(py::module_::import("sys").attr("version")).cast<std::string>();
#ifdef KFORGE_RUNNER_CUDA
    j.runner_cuda = true;
#endif
    try {
      j.triton = py::str(py::module_::import("triton").attr("__version__")).cast<std::string>();
    } catch (py::error_already_set&) {
    }
    // The reference's own precision (docs/judge.md): whether PyTorch lets fp32 matmuls and cuDNN
    // convolutions use TF32 here. Recorded per run (the manifest holds this reply).
    auto backends = torch.attr("backends");
    j.reference_tf32_matmul = backends.attr("cuda").attr("matmul").attr("allow_tf32").cast<bool>();
    j.reference_tf32_cudnn = backends.attr("cudnn").attr("allow_tf32").cast<bool>();
    auto tc = torch.attr("cuda");
    j.cuda_available = tc.attr("is_available")().cast<bool>();
    if (j.cuda_available) {
      int n = tc.attr("device_count")().cast<int>();
      for (int i = 0; i < n; ++i) {
        auto p = tc.attr("get_device_properties")(i);
        j.devices.push_back(
            {i, p.attr("name").cast<std::string>(),
             std::to_string(p.attr("major").cast<int>()) + "." + std::to_string(p.attr("minor").cast<int>()),
             p.attr("total_memory").cast<int64_t>(),
             lock_name(at::Device(at::kCUDA, static_cast<int8_t>(i)))});
      }
      j.torch_cuda = py::str(torch.attr("version").attr("cuda")).cast<std::string>();
    }
    j.timed_lock_dir = timed_lock_.dir();
    j.timed_lock_unavailable = kforge::backends::FlockTimedLock::prepare_dir(timed_lock_.dir());
    return j;
  }

  static std::vector<protocol::TensorSpec> specs_of(const std::vector<TensorSpec>& v) {
    std::vector<protocol::TensorSpec> a;
    for (const auto& s : v) a.push_back({s.name, s.kind, s.dtype, s.shape});
    return a;
  }

  protocol::LoadReply load(const protocol::LoadRequest& req) {
    auto t0 = Clock::now();
    const std::string& dev = req.device;
    const std::string key = req.task + '\n' + dev + '\n' + std::to_string(req.model_seed) + '\n' + req.flops +
                            '\n' + req.bytes + '\n' + req.source;
    cur_ = nullptr;
    use_device(dev);
    if (auto it = tasks_.find(key); it != tasks_.end()) {
      cur_ = it->second.get();
      cur_->last_use = ++use_clock_;
      return load_reply(t0, true);
    }
    evict(static_cast<std::size_t>(env_long("KFORGE_RUNNER_TASKS", 8)) - 1, nullptr);  // room for one more
    auto t = std::make_unique<Loaded>();
    t->task.ref.load(req.task, req.file, req.source, dev, req.model_seed, "",
                     testblock_path(judge_context()));
    t->task.out_masks = t->task.ref.masks();
    t->task.params = t->task.ref.parameters();
    for (const auto& h : t->task.params)
      t->param_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    // One reference run on a probe input set gives the outputs' shapes and dtypes.
    auto inputs = t->task.ref.make_inputs(req.probe_seed);
    auto outs = t->task.ref.run(inputs);
    sync();
    t->task.in_specs = t->task.ref.input_specs(inputs, t->task.params);
    for (std::size_t i = 0; i < outs.size(); ++i)
      t->task.out_specs.push_back({outs.size() == 1 ? "out" : "out" + std::to_string(i), "output",
                                   outs[i].t.sizes().vec(), dtype_name(outs[i].t.scalar_type())});
    protocol::LoadReply& r = t->reply;
    r.inputs = specs_of(t->task.in_specs);
    r.outputs = specs_of(t->task.out_specs);
    for (const auto& h : inputs) r.input_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    r.flops = t->task.ref.formula(req.flops);
    r.bytes = t->task.ref.formula(req.bytes);
    // Where the suite declares no FLOP formula (KernelBench, TritonBench), PyTorch's counter over
    // the probe call: an estimate, marked so. Bytes without a formula: the client's sum of the
    // inputs' and outputs' bytes (a lower bound; agent task_bytes).
    r.flops_source = r.flops > 0 ? "declared" : "";
    if (r.flops <= 0) {
      const double counted = t->task.ref.count_flops(inputs);
      if (counted > 0) {
        r.flops = counted;
        r.flops_source = "estimated";
      }
      sync();
    }
    r.bytes_source = r.bytes > 0 ? "declared" : "estimated";
    t->load_request = req;
    t->last_use = ++use_clock_;
    Loaded* loaded = t.get();
    tasks_[key] = std::move(t);
    evict(tasks_.size(), loaded);  // the byte cap
    cur_ = loaded;
    return load_reply(t0, false);
  }

  /// The reply to `load` for the current task.
  protocol::LoadReply load_reply(Clock::time_point t0, bool cached) const {
    protocol::LoadReply r = cur_->reply;
    r.load_ms = ms_since(t0);
    r.cached = cached;
    r.tasks_held = static_cast<int>(tasks_.size());
    return r;
  }

  json reference(const protocol::ReferenceRequest& req) {
    require_task();
    protocol::ReferenceReply r;
    for (int i = 0; i < req.trials; ++i) {
      auto t0 = Clock::now();
      auto inputs = cur().task.ref.make_inputs(req.seed + i);
      auto outs = cur().task.ref.run(inputs);
      sync();
      r.ms.push_back(ms_since(t0));
      if (!all_finite(outs)) return error(JudgeError::reference_failed, "reference output has NaN/Inf");
    }
    return protocol::encode(r);
  }

  /// Checks a candidate in a fresh candidate host (check.cpp); the task's own tensors are
  /// never handed to it, only copies.
  json check(const protocol::CheckRequest& req) {
    session_.reset();
    return check_candidate(judge_context(), cur().task, req, &session_);
  }

  /// Times the candidate (in a fresh host, killed afterwards) and then the reference.
  /// The device's measured peak bandwidth, measured once per device (bytes/s).
  const Measured& peak_bandwidth(const at::Device& d) {
    auto [it, fresh] = peak_bytes_per_s_.try_emplace(d.str());
    if (fresh) {
      it->second = measure_peak_bandwidth(d);
      release_cached_memory();
    }
    return it->second;
  }

  json bench(const protocol::BenchRequest& req) {
    JudgeContext ctx = judge_context();
    // The speed-of-light bound's bandwidth (the host, if any, is frozen while it is measured).
    ctx.peak_bytes_per_s = req.peak_bytes_per_s ? *req.peak_bytes_per_s : peak_bandwidth(device_).per_s;
    return bench_candidate(ctx, cur().task, req, std::move(session_));
  }

  protocol::PeaksReply peaks(const protocol::PeaksRequest& req) {
    const at::Device d(req.device.empty() ? device_.str() : req.device);
    const Measured flops = measure_fp32_flops(d);
    release_cached_memory();
    const Measured& dram = peak_bandwidth(d);
    return {d.str(), dram.per_s, flops.per_s, dram.method + "; " + flops.method};
  }

  /// The candidate host started warm before the first check; no `load` precedes it, so the
  /// request names its device.
  protocol::PrewarmReply prewarm(const protocol::PrewarmRequest& req) {
    if (!req.device.empty()) use_device(req.device);
    warm_flop_counter_ = true;  // after_reply
    return prewarm_host(judge_context(), req.host);
  }

  /// A TritonBench test block: no `load` precedes it, so the request names its device.
  json testblock(const protocol::TestblockRequest& req) {
    if (!req.device.empty()) use_device(req.device);  // one client, one device
    return check_testblock(judge_context(), req);
  }

  /// Makes `dev` this runner's device: device_ and, for a GPU, the current CUDA device of the
  /// thread that serves requests (torch's too), so that what the judge allocates without naming
  /// a device (the exchange's cudaMalloc) and what a reference or a test block makes on "cuda"
  /// land on it. A runner of cuda:1 made them on cuda:0 before, and every test block it judged
  /// failed ("Specified device cuda:1 does not match device of data cuda:0").
  void use_device(const std::string& dev) {
    device_ = at::Device(dev);
    if (!device_.is_cuda() || !device_.has_index() || device_.index() == current_cuda_) return;
    py::module_::import("torch").attr("cuda").attr("set_device")(static_cast<int>(device_.index()));
    current_cuda_ = device_.index();
  }

  JudgeContext judge_context() const {
    JudgeContext c;
    c.device = device_;
    c.host_exe = host_exe();
    c.python = setting("KFORGE_HOST_PYTHON", KFORGE_PYTHON_EXE);
    c.triton_host = setting("KFORGE_TRITON_HOST", KFORGE_TRITON_HOST_DEFAULT);
    c.pyconfine_lib = setting("KFORGE_PYCONFINE", KFORGE_PYCONFINE_DEFAULT);
    c.triton_cache = host_temp_dir() + "/kforge-triton-host-" + std::to_string(::getuid());
    c.zygotes = zygotes_.get();
    c.timed_lock = &timed_lock_;
    c.timed_lock_name = lock_name(device_);
    c.timed_lock_held = lock_held_by_client_;
    c.timed_lock_shared = lock_shared_by_client_;
#ifdef KFORGE_RUNNER_CUDA
    if (device_.is_cuda()) {
      int l2 = 0;
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_.index());
      c.l2_bytes = l2;
    }
#endif
    return c;
  }

  /// The device's timed-lock name (timed_lock.hpp): a GPU by its PCI bus id, which names it
  /// the same in every process whatever CUDA_VISIBLE_DEVICES says.
  static std::string lock_name(const at::Device& d) {
    std::string bus;
#ifdef KFORGE_RUNNER_CUDA
    if (d.is_cuda()) {
      char id[64] = {0};
      if (cudaDeviceGetPCIBusId(id, sizeof id, d.index()) == cudaSuccess) bus = id;
    }
#endif
    return kforge::backends::timed_lock_name(d.str(), bus);
  }

  static std::string self_exe() {
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("kforge-runner");
  }

  /// $name when set and not empty, else the build's default.
  static std::string setting(const char* name, const char* fallback) {
    if (const char* p = std::getenv(name); p && *p) return p;
    return fallback;
  }

  static std::string host_exe() {
    if (const char* p = std::getenv("KFORGE_HOST"); p && *p) return p;
    return KFORGE_HOST_DEFAULT;
  }

 public:
  /// `--profile-reference FILE`: loads the task of the load request in FILE and makes the
  /// reference call that Nsight Compute profiles (profile_setup.cpp).
  int profile_reference(const std::string& file) {
    std::ifstream f(file);
    const kforge::Expected<protocol::Request> req = protocol::decode_request(json::parse(f));
    if (!req) throw std::runtime_error(file + ": " + req.failure().message);
    const auto* q = std::get_if<protocol::LoadRequest>(&req->body);
    if (!q) throw std::runtime_error(file + ": not a load request");
    load(*q);
    profile_reference_call(cur().task.ref, q->profile_seed.value_or(3000), device_);
    return 0;
  }

 private:
  protocol::TritonBenchReply triton_bench(const protocol::TritonBenchRequest& req) {
    require_task();
    auto inputs = cur().task.ref.make_inputs(req.seed);
    return {cur().task.ref.triton_do_bench(inputs)};
  }
};

void add_site_paths() {
  auto sys = py::module_::import("sys");
  std::string sites = KFORGE_PYTHON_SITE;
  if (const char* extra = std::getenv("KFORGE_PYTHONPATH")) sites = std::string(extra) + ":" + sites;
  std::stringstream ss(sites);
  std::string p;
  py::list path = sys.attr("path");
  // In front, in order: the build's interpreter (a venv) wins over the system's dist-packages,
  // which the embedded interpreter of the same Python also lists (a Debian python3-torch there
  // must not be the one imported).
  std::size_t at = 0;
  while (std::getline(ss, p, ':'))
    if (!p.empty() && !path.contains(p)) path.attr("insert")(at++, p);
}

/// A fatal signal in the judge is kforge's fault (infra_error/judge_died, never the model's):
/// the signal's origin and the native stack go to stderr, whose tail the client puts in the
/// attempt's message; then Python's faulthandler (the action this replaced) prints the Python
/// stacks and raises the signal again, so that the client still sees the process die of it.
struct sigaction g_previous[32];

void on_fatal_signal(int sig, siginfo_t* si, void* ctx) {
  char head[320];
  void* pc = nullptr;
  void* caller = nullptr;  // the return address on top of the stack (a call through a null pointer)
#if defined(__x86_64__)
  const greg_t* g = static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs;
  pc = reinterpret_cast<void*>(g[REG_RIP]);
  if (g[REG_RSP] != 0) caller = *reinterpret_cast<void* const*>(g[REG_RSP]);
#else
  (void)ctx;
#endif
  Dl_info pc_info{}, caller_info{};
  ::dladdr(caller, &caller_info);
  ::dladdr(pc, &pc_info);
  const int n = std::snprintf(
      head, sizeof head,
      "kforge-runner: fatal signal %d (%s), code %d, address %p, from pid %d, in thread %ld; pc %p "
      "(%s+%#lx), "
      "top of stack %p (%s+%#lx); native stack:\n",
      sig, strsignal(sig), si->si_code, si->si_addr, static_cast<int>(si->si_pid),
      static_cast<long>(::gettid()), pc, pc_info.dli_fname ? pc_info.dli_fname : "?",
      static_cast<unsigned long>(static_cast<char*>(pc) - static_cast<char*>(pc_info.dli_fbase)), caller,
      caller_info.dli_fname ? caller_info.dli_fname : "?",
      static_cast<unsigned long>(static_cast<char*>(caller) - static_cast<char*>(caller_info.dli_fbase)));
  if (n > 0 && ::write(2, head, static_cast<std::size_t>(n)) < 0) {
  }
  void* frames[24];  // the client keeps the tail of stderr: the frames nearest the fault
  ::backtrace_symbols_fd(frames, ::backtrace(frames, 24), 2);
  ::sigaction(sig, &g_previous[sig], nullptr);
  ::raise(sig);
}

void install_crash_report() {
  static char alt_stack[64 << 10];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc_s now, not inside the handler
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace

int main(int argc, char** argv) {
  // Not dumpable: a process of the same user without CAP_SYS_PTRACE (a confined candidate host
  // runs as such) can neither ptrace this judge nor read its /proc/<pid>/mem.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // Private protocol streams; the candidate's stdout goes to stderr, its stdin is empty.
  g_out_fd = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  int in_fd = ::fcntl(0, F_DUPFD_CLOEXEC, 3);
  ::dup2(2, 1);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  g_in = ::fdopen(in_fd, "r");
  if (g_out_fd < 0 || !g_in) return 2;

  py::scoped_interpreter interp;
  add_site_paths();
  py::module_::import("faulthandler").attr("enable")(py::arg("all_threads") = true);
  install_crash_report();
  try {
    py::module_::import("torch");
  } catch (py::error_already_set& e) {
    reply(error(JudgeError::python_exception, "import torch failed: " + python_traceback(e)));
    return 3;
  }
  const bool profile_reference = argc == 3 && std::string(argv[1]) == "--profile-reference";
  if (profile_reference) {
    // Started ahead of its turn by the profile step (profile_gate.hpp): Triton is imported
    // before the gate too (a TritonBench reference's module imports it), CUDA only after it.
    try {
      py::module_::import("triton");
    } catch (py::error_already_set&) {
    }
    if (!kforge::backends::wait_for_profile_gate(g_out_fd)) {  // fd 1 is stderr here
      std::fprintf(stderr, "kforge-runner --profile-reference: the profile gate never opened\n");
      return 2;
    }
  }
  Worker w;
  if (profile_reference) {
    try {
      return w.profile_reference(argv[2]);
    } catch (py::error_already_set& e) {
      std::fprintf(stderr, "kforge-runner --profile-reference: %s\n", python_traceback(e).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kforge-runner --profile-reference: %s\n", e.what());
    }
    return 1;
  }
  bool one_shot_info = argc > 1 && std::string(argv[1]) == "--info";
  if (one_shot_info) {
    reply(w.handle(protocol::HelloRequest{}));
    return 0;
  }
  reply(protocol::ready_line());
  std::string line;
  char* buf = nullptr;
  std::size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&buf, &cap, g_in)) > 0) {
    line.assign(buf, static_cast<std::size_t>(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      reply(error(JudgeError::protocol, "bad JSON request: " + line.substr(0, 200)));
      continue;
    }
    const kforge::Expected<protocol::Request> req = protocol::decode_request(j);
    if (!req) {  // an unknown command, a missing field or one of the wrong type: named, never thrown
      json r = error(JudgeError::protocol, req.failure().message);
      if (j.is_object() && j.contains("id")) r["id"] = j["id"];
      reply(r);
      continue;
    }
    if (req->command() == protocol::Command::quit) break;
    reply(w.handle(req.value()));
    w.after_reply(in_fd);
  }
  std::free(buf);
  return 0;
}
