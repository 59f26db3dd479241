// kforge-runner: the judge's warm worker (docs/judge.md). One process per device; reads
// one JSON request per line on stdin, writes one JSON reply per line (protocol:
// backends/include/kforge/backends/runner_client.hpp; every reply echoes the request's id).
// It holds the reference, the inputs, the tolerances and the clock; candidate code never
// runs in it: checks and benches start a fresh kforge-host per candidate (judge.cpp).
//
// The protocol streams are moved to private file descriptors at start-up (close-on-exec, so
// no candidate host inherits them), and fd 1 is pointed at stderr.
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
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
#include "runner.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <cuda_runtime.h>
#endif

using json = nlohmann::json;
namespace py = pybind11;
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

class Worker {
 public:
  json handle(const json& req) {
    const std::string cmd = req.value("cmd", "");
    if (cmd != "bench") session_.reset();  // a passed candidate's host lives only until its bench
    // The client holds the device's timed lock for this whole request (bench, peaks, ...).
    lock_held_by_client_ = req.value("timed_lock_held", false);
    lock_shared_by_client_ = req.value("timed_lock_shared", false);  // a check: untimed work
    json r;
    try {
      if (cmd == "hello")
        r = hello();
      else if (cmd == "load")
        r = load(req);
      else if (cmd == "reference")
        r = reference(req);
      else if (cmd == "check")
        r = check(req);
      else if (cmd == "bench")
        r = bench(req);
      else if (cmd == "peaks")
        r = peaks(req);
      else if (cmd == "prewarm")
        r = prewarm(req);
      else if (cmd == "profile_setup")
        r = profile_setup(cur().task, cur().load_request, req, judge_context(), self_exe());
      else if (cmd == "testblock")
        r = testblock(req);
      else if (cmd == "triton_bench")
        r = triton_bench(req);
      else
        r = {{"ok", false}, {"error", "protocol"}, {"message", "unknown cmd '" + cmd + "'"}};
    } catch (py::error_already_set& e) {
      r = {{"ok", false}, {"error", "python_exception"}, {"message", python_traceback(e)}};
    } catch (const std::exception& e) {
      r = {{"ok", false}, {"error", "runner"}, {"message", e.what()}};
    }
    if (req.contains("id")) r["id"] = req["id"];
    return r;
  }

 private:
  /// A loaded task: the reference model, its parameters and the tensor specs. The worker keeps
  /// the most recently used few (KFORGE_RUNNER_TASKS, default 8; at most
  /// KFORGE_RUNNER_TASK_MB MiB of parameters and buffers, default 8192), so an agent that
  /// interleaves tasks does not rebuild a model for every candidate.
  struct Loaded {
    LoadedTask task;
    json reply;         ///< the load reply, without load_ms
    json load_request;  ///< what loaded it (the profile step's reference process loads it again)
    int64_t param_bytes = 0;
    uint64_t last_use = 0;
  };
  std::map<std::string, std::unique_ptr<Loaded>> tasks_;  ///< key: task, device, seed, source, formulas
  /// Triton hosts forked warm (zygote.hpp); null with KFORGE_TRITON_ZYGOTE=0. Outlives session_.
  std::unique_ptr<Zygotes> zygotes_ =
      Zygotes::enabled_by_environment() ? std::make_unique<Zygotes>() : nullptr;
  std::unique_ptr<CandidateSession> session_;            ///< the last passed check's host, for its bench
  mutable kforge::backends::FlockTimedLock timed_lock_;  ///< the devices' locks for timed work
  bool lock_held_by_client_ = false;                     ///< the current request runs under the client's hold
  bool lock_shared_by_client_ = false;                   ///< ...under its shared hold
  std::map<std::string, Measured> peak_bytes_per_s_;     ///< device -> measured peak bandwidth (bytes/s)
  Loaded* cur_ = nullptr;                                ///< the task check/bench use; null: none
  uint64_t use_clock_ = 0;
  at::Device device_{at::kCPU};

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

  json hello() {
    json j{{"ok", true}};
    j["libtorch"] = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
                    std::to_string(TORCH_VERSION_PATCH);
    auto torch = py::module_::import("torch");
    j["torch"] = py::str(torch.attr("__version__")).cast<std::string>();
    j["python"] = py::str(py::module_::import("sys").attr("version")).cast<std::string>();
#ifdef KFORGE_RUNNER_CUDA
    j["runner_cuda"] = true;
#else
    j["runner_cuda"] = false;
#endif
    try {
      j["triton"] = py::str(py::module_::import("triton").attr("__version__")).cast<std::string>();
    } catch (py::error_already_set&) {
      j["triton"] = nullptr;
    }
    // The reference's own precision (docs/judge.md): whether PyTorch lets fp32 matmuls and cuDNN
    // convolutions use TF32 here. Recorded per run (the manifest holds this reply).
    auto backends = torch.attr("backends");
    j["reference_tf32"] = {{"matmul", backends.attr("cuda").attr("matmul").attr("allow_tf32").cast<bool>()},
                           {"cudnn", backends.attr("cudnn").attr("allow_tf32").cast<bool>()}};
    auto tc = torch.attr("cuda");
    bool avail = tc.attr("is_available")().cast<bool>();
    j["cuda_available"] = avail;
    j["devices"] = json::array();
    if (avail) {
      int n = tc.attr("device_count")().cast<int>();
      for (int i = 0; i < n; ++i) {
        auto p = tc.attr("get_device_properties")(i);
        j["devices"].push_back({{"index", i},
                                {"name", p.attr("name").cast<std::string>()},
                                {"cc", std::to_string(p.attr("major").cast<int>()) + "." +
                                           std::to_string(p.attr("minor").cast<int>())},
                                {"memory_bytes", p.attr("total_memory").cast<int64_t>()},
                                {"timed_lock", lock_name(at::Device(at::kCUDA, static_cast<int8_t>(i)))}});
      }
      j["torch_cuda"] = py::str(torch.attr("version").attr("cuda")).cast<std::string>();
    }
    j["timed_lock_dir"] = timed_lock_.dir();
    if (std::string why = kforge::backends::FlockTimedLock::prepare_dir(timed_lock_.dir()); !why.empty())
      j["timed_lock_unavailable"] = why;
    return j;
  }

  static json specs_json(const std::vector<TensorSpec>& v) {
    json a = json::array();
    for (const auto& s : v)
      a.push_back({{"name", s.name}, {"kind", s.kind}, {"shape", s.shape}, {"dtype", s.dtype}});
    return a;
  }

  json load(const json& req) {
    auto t0 = Clock::now();
    std::string dev = req.value("device", "cpu");
    const std::string task = req.at("task").get<std::string>(), source = req.at("source").get<std::string>();
    const int64_t model_seed = req.value("model_seed", 42);
    const std::string key = task + '\n' + dev + '\n' + std::to_string(model_seed) + '\n' +
                            req.value("flops", std::string()) + '\n' + req.value("bytes", std::string()) +
                            '\n' + source;
    cur_ = nullptr;
    device_ = at::Device(dev);
    if (auto it = tasks_.find(key); it != tasks_.end()) {
      cur_ = it->second.get();
      cur_->last_use = ++use_clock_;
      return load_reply(t0, true);
    }
    evict(static_cast<std::size_t>(env_long("KFORGE_RUNNER_TASKS", 8)) - 1, nullptr);  // room for one more
    auto t = std::make_unique<Loaded>();
    t->task.ref.load(task, req.value("file", "<task>"), source, dev, model_seed, "",
                     testblock_path(judge_context()));
    t->task.out_masks = t->task.ref.masks();
    t->task.params = t->task.ref.parameters();
    for (const auto& h : t->task.params)
      t->param_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    // One reference run on a probe input set gives the outputs' shapes and dtypes.
    auto inputs = t->task.ref.make_inputs(req.value("probe_seed", 7));
    auto outs = t->task.ref.run(inputs);
    sync();
    t->task.in_specs = t->task.ref.input_specs(inputs, t->task.params);
    for (std::size_t i = 0; i < outs.size(); ++i)
      t->task.out_specs.push_back({outs.size() == 1 ? "out" : "out" + std::to_string(i), "output",
                                   outs[i].t.sizes().vec(), dtype_name(outs[i].t.scalar_type())});
    int64_t in_bytes = 0;
    for (const auto& h : inputs) in_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    t->reply = {{"ok", true},
                {"inputs", specs_json(t->task.in_specs)},
                {"outputs", specs_json(t->task.out_specs)},
                {"input_bytes", in_bytes}};
    t->reply["flops"] = t->task.ref.formula(req.value("flops", std::string()));
    t->reply["bytes"] = t->task.ref.formula(req.value("bytes", std::string()));
    // Where the suite declares no FLOP formula (KernelBench, TritonBench), PyTorch's counter over
    // the probe call: an estimate, marked so. Bytes without a formula: the client's sum of the
    // inputs' and outputs' bytes (a lower bound; agent task_bytes).
    t->reply["flops_source"] = t->reply["flops"].get<double>() > 0 ? "declared" : "";
    if (t->reply["flops"].get<double>() <= 0) {
      const double counted = t->task.ref.count_flops(inputs);
      if (counted > 0) {
        t->reply["flops"] = counted;
        t->reply["flops_source"] = "estimated";
      }
      sync();
    }
    t->reply["bytes_source"] = t->reply["bytes"].get<double>() > 0 ? "declared" : "estimated";
    t->load_request = req;
    t->load_request.erase("id");
    t->last_use = ++use_clock_;
    Loaded* loaded = t.get();
    tasks_[key] = std::move(t);
    evict(tasks_.size(), loaded);  // the byte cap
    cur_ = loaded;
    return load_reply(t0, false);
  }

  /// The reply to `load` for the current task.
  json load_reply(Clock::time_point t0, bool cached) const {
    json j = cur_->reply;
    j["load_ms"] = ms_since(t0);
    j["cached"] = cached;
    j["tasks_held"] = tasks_.size();
    return j;
  }

  json reference(const json& req) {
    require_task();
    int trials = req.value("trials", 5);
    int64_t seed = req.value("seed", 1000);
    json ms = json::array(), shapes = json::array();
    for (int i = 0; i < trials; ++i) {
      auto t0 = Clock::now();
      auto inputs = cur().task.ref.make_inputs(seed + i);
      auto outs = cur().task.ref.run(inputs);
      sync();
      ms.push_back(ms_since(t0));
      if (!all_finite(outs))
        return {{"ok", false}, {"error", "reference"}, {"message", "reference output has NaN/Inf"}};
    }
    return {{"ok", true}, {"ms", ms}};
  }

  /// Checks a candidate in a fresh candidate host (judge.cpp); the task's own tensors are
  /// never handed to it, only copies.
  json check(const json& req) {
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

  json bench(const json& req) {
    JudgeContext ctx = judge_context();
    // The speed-of-light bound's bandwidth (the host, if any, is frozen while it is measured).
    ctx.peak_bytes_per_s = req.contains("peak_bytes_per_s") ? req["peak_bytes_per_s"].get<double>()
                                                            : peak_bandwidth(device_).per_s;
    return bench_candidate(ctx, cur().task, req, std::move(session_));
  }

  json peaks(const json& req) {
    const at::Device d(req.value("device", device_.str()));
    const Measured flops = measure_fp32_flops(d);
    release_cached_memory();
    const Measured& dram = peak_bandwidth(d);
    return {{"ok", true},
            {"device", d.str()},
            {"dram_bytes_per_s", dram.per_s},
            {"flops_per_s", flops.per_s},
            {"method", dram.method + "; " + flops.method}};
  }

  /// The candidate host started warm before the first check; no `load` precedes it, so the
  /// request names its device.
  json prewarm(const json& req) {
    device_ = at::Device(req.value("device", device_.str()));
    const auto kind = kforge::backends::parse_host_kind(req.value("host", std::string()));
    if (!kind)
      return {{"ok", false}, {"error", "protocol"}, {"message", "prewarm: host must be native or python"}};
    return prewarm_host(judge_context(), *kind);
  }

  /// A TritonBench test block: no `load` precedes it, so the request names its device.
  json testblock(const json& req) {
    device_ = at::Device(req.value("device", device_.str()));  // one client, one device
    return check_testblock(judge_context(), req);
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
    json req = json::parse(f);
    json r = load(req);
    if (!r.value("ok", false)) throw std::runtime_error("load failed: " + r.dump());
    profile_reference_call(cur().task.ref, req.value("profile_seed", 3000), device_);
    return 0;
  }

 private:
  json triton_bench(const json& req) {
    require_task();
    auto inputs = cur().task.ref.make_inputs(req.value("seed", 2000));
    return {{"ok", true}, {"ms", cur().task.ref.triton_do_bench(inputs)}};
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
    reply({{"ok", false},
           {"error", "python_exception"},
           {"message", "import torch failed: " + python_traceback(e)}});
    return 3;
  }
  Worker w;
  if (argc == 3 && std::string(argv[1]) == "--profile-reference") {
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
    reply(w.handle({{"cmd", "hello"}}));
    return 0;
  }
  reply({{"ok", true}, {"ready", true}});
  std::string line;
  char* buf = nullptr;
  std::size_t cap = 0;
  ssize_t n;
  while ((n = ::getline(&buf, &cap, g_in)) > 0) {
    line.assign(buf, static_cast<std::size_t>(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;
    json req;
    try {
      req = json::parse(line);
    } catch (const std::exception& e) {
      reply(
          {{"ok", false}, {"error", "protocol"}, {"message", std::string("bad JSON request: ") + e.what()}});
      continue;
    }
    if (req.value("cmd", "") == "quit") break;
    json r = w.handle(req);
    reply(r);
  }
  std::free(buf);
  return 0;
}
