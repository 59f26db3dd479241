// kforge-runner: the warm evaluation worker (DESIGN.md §4). One process per device; reads
// one JSON request per line on stdin, writes one JSON reply per line. The protocol is
// documented in backends/include/kforge/backends/runner_client.hpp.
//
// The protocol streams are moved to private file descriptors at start-up, and fd 1 is
// pointed at stderr, so a candidate that prints cannot corrupt the protocol.
#include <dlfcn.h>
#include <fcntl.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <variant>

#include "runner.hpp"

#ifdef KFORGE_RUNNER_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

using json = nlohmann::json;
namespace py = pybind11;
using namespace kforge::runner;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

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

using KfForward = int (*)(const kf_tensor*, int, kf_tensor*, int, void*);

struct Failure {
  std::string outcome, sub_kind, message;
  bool fatal = false;  ///< the worker must be replaced (sticky CUDA error)
};

#ifdef KFORGE_RUNNER_CUDA
std::string cuda_sub_kind(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
      return "illegal_memory_access";
    case cudaErrorMisalignedAddress:
      return "misaligned_address";
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidValue:
      return "invalid_launch";
    case cudaErrorMemoryAllocation:
      return "out_of_memory";
    default:
      return "cuda_error";
  }
}
bool cuda_sticky(cudaError_t e) {
  // Errors that corrupt the context: the worker cannot go on after them.
  switch (e) {
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidValue:
    case cudaErrorMemoryAllocation:
      return false;
    default:
      return true;
  }
}
#endif

class Worker {
 public:
  json handle(const json& req) {
    const std::string cmd = req.value("cmd", "");
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
    Reference ref;
    std::vector<HeldTensor> params;
    std::vector<TensorSpec> in_specs, out_specs;
    json reply;  ///< the load reply, without load_ms
    int64_t param_bytes = 0;
    uint64_t last_use = 0;
  };
  std::map<std::string, std::unique_ptr<Loaded>> tasks_;  ///< key: task, device, seed, source, formulas
  Loaded* cur_ = nullptr;                                 ///< the task check/bench use; null: none
  uint64_t use_clock_ = 0;
  std::map<std::string, KfForward> candidates_;
  at::Device device_{at::kCPU};
  at::Tensor flush_;

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

  void sync() {
#ifdef KFORGE_RUNNER_CUDA
    if (cuda()) cudaDeviceSynchronize();
#endif
  }

  void* stream() {
#ifdef KFORGE_RUNNER_CUDA
    if (cuda()) return c10::cuda::getCurrentCUDAStream(device_.index()).stream();
#endif
    return nullptr;
  }

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
                                {"memory_bytes", p.attr("total_memory").cast<int64_t>()}});
      }
      j["torch_cuda"] = py::str(torch.attr("version").attr("cuda")).cast<std::string>();
    }
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
    t->ref.load(task, req.value("file", "<task>"), source, dev, model_seed);
    t->params = t->ref.parameters();
    for (const auto& h : t->params) t->param_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    // One reference run on a probe input set gives the outputs' shapes and dtypes.
    auto inputs = t->ref.make_inputs(req.value("probe_seed", 7));
    auto outs = t->ref.run(inputs);
    sync();
    t->in_specs = t->ref.input_specs(inputs, t->params);
    for (std::size_t i = 0; i < outs.size(); ++i)
      t->out_specs.push_back({outs.size() == 1 ? "out" : "out" + std::to_string(i), "output",
                              outs[i].t.sizes().vec(), dtype_name(outs[i].t.scalar_type())});
    int64_t in_bytes = 0;
    for (const auto& h : inputs) in_bytes += h.t.numel() * static_cast<int64_t>(h.t.element_size());
    if (cuda() && !flush_.defined()) {
      // Larger than the L2 of any current GPU (H100: 50 MB): written before each repetition.
      flush_ = at::empty({256LL << 20}, at::TensorOptions().dtype(at::kByte).device(device_));
    }
    t->reply = {{"ok", true},
                {"inputs", specs_json(t->in_specs)},
                {"outputs", specs_json(t->out_specs)},
                {"input_bytes", in_bytes}};
    t->reply["flops"] = t->ref.formula(req.value("flops", std::string()));
    t->reply["bytes"] = t->ref.formula(req.value("bytes", std::string()));
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
      auto inputs = cur().ref.make_inputs(seed + i);
      auto outs = cur().ref.run(inputs);
      sync();
      ms.push_back(ms_since(t0));
      bool finite = true;
      for (auto& o : outs)
        if (at::isFloatingType(o.t.scalar_type()) && !o.t.isfinite().all().item<bool>()) finite = false;
      if (!finite)
        return {{"ok", false}, {"error", "reference"}, {"message", "reference output has NaN/Inf"}};
    }
    return {{"ok", true}, {"ms", ms}};
  }

  std::variant<KfForward, Failure> candidate(const std::string& path) {
    if (auto it = candidates_.find(path); it != candidates_.end()) return it->second;
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return Failure{"runtime_error", "load", std::string("cannot load the artifact: ") + ::dlerror()};
    auto fn = reinterpret_cast<KfForward>(::dlsym(h, "kf_forward"));
    if (!fn) return Failure{"format_error", "entry_point", "the artifact exports no kf_forward"};
    candidates_[path] = fn;
    return fn;
  }

  // Calls the candidate once. On success returns nullopt and, when `snapshot` is given,
  // fills it with copies of the outputs taken on the runner's stream right after the call
  // (before any device-wide synchronisation: work left running on another stream shows as
  // unwritten output).
  std::optional<Failure> call(KfForward fn, std::vector<kf_tensor>& in, std::vector<kf_tensor>& out,
                              std::vector<GuardedOutput>* outs, std::vector<at::Tensor>* snapshot) {
    int rc = fn(in.data(), static_cast<int>(in.size()), out.data(), static_cast<int>(out.size()), stream());
#ifdef KFORGE_RUNNER_CUDA
    if (cuda()) {
      cudaError_t e = cudaGetLastError();
      if (e == cudaSuccess && snapshot)
        for (auto& g : *outs) snapshot->push_back(g.view.clone());
      if (e == cudaSuccess) e = cudaDeviceSynchronize();
      if (e != cudaSuccess)
        return Failure{"runtime_error", cuda_sub_kind(e),
                       std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e), cuda_sticky(e)};
    } else
#endif
        if (snapshot) {
      for (auto& g : *outs) snapshot->push_back(g.view.clone());
    }
    if (rc != 0)
      return Failure{"runtime_error", "nonzero_return", "kf_forward returned " + std::to_string(rc)};
    return std::nullopt;
  }

  static json failure_json(const Failure& f) {
    return {{"ok", true},
            {"outcome", f.outcome},
            {"sub_kind", f.sub_kind},
            {"message", f.message},
            {"fatal", f.fatal}};
  }

  std::vector<GuardedOutput> fresh_outputs() {
    std::vector<GuardedOutput> outs;
    for (const auto& s : cur().out_specs) {
      outs.push_back(make_guarded_output(s.shape, scalar_type_of(s.dtype), device_));
    }
    return outs;
  }

  std::vector<kf_tensor> kf_inputs(const std::vector<HeldTensor>& inputs) {
    std::vector<kf_tensor> v;
    for (const auto& h : inputs) v.push_back(to_kf(h.t));
    for (const auto& h : cur().params) v.push_back(to_kf(h.t));
    return v;
  }

  /// Checks a candidate; afterwards the task's parameters and buffers are restored from copies,
  /// so a kernel that wrote into them cannot change the reference for later candidates.
  json check(const json& req) {
    Loaded& task = cur();
    std::vector<at::Tensor> param_copies;
    for (const auto& p : task.params) param_copies.push_back(p.t.clone());
    auto restore = [&] {
      for (std::size_t k = 0; k < task.params.size(); ++k) task.params[k].t.copy_(param_copies[k]);
    };
    json r;
    try {
      r = check_candidate(req, task, param_copies);
    } catch (...) {
      restore();
      throw;
    }
    if (!r.value("fatal", false)) restore();  // a poisoned CUDA context ends the worker anyway
    return r;
  }

  json check_candidate(const json& req, Loaded& task, const std::vector<at::Tensor>& param_copies) {
    auto t0 = Clock::now();
    auto c = candidate(req.at("artifact").get<std::string>());
    if (auto* f = std::get_if<Failure>(&c)) return failure_json(*f);
    KfForward fn = std::get<KfForward>(c);
    Tolerances tol;
    if (req.contains("tolerances"))
      for (auto& [k, v] : req["tolerances"].items())
        tol.by_dtype[k] = {v.at(0).get<double>(), v.at(1).get<double>()};
    int trials = req.value("trials", 5);
    int64_t seed = req.value("seed", 1000);
    json result{{"ok", true}, {"trials", trials}};
    double max_abs = 0, max_rel = 0;
    for (int i = 0; i < trials; ++i) {
      auto inputs = task.ref.make_inputs(seed + i);
      std::vector<at::Tensor> input_copies;
      for (const auto& h : inputs) input_copies.push_back(h.t.clone());
      auto outs = fresh_outputs();
      auto kin = kf_inputs(inputs);
      std::vector<kf_tensor> kout;
      for (auto& g : outs) kout.push_back(to_kf(g.view));
      std::vector<at::Tensor> snapshot;
      if (auto f = call(fn, kin, kout, &outs, &snapshot)) {
        json j = failure_json(*f);
        j["trials_passed"] = i;
        return j;
      }
      for (std::size_t k = 0; k < outs.size(); ++k)
        if (!guards_intact(outs[k]))
          return {{"ok", true},
                  {"outcome", "runtime_error"},
                  {"sub_kind", "out_of_bounds_write"},
                  {"trials_passed", i},
                  {"message", "the kernel wrote outside output " + task.out_specs[k].name +
                                  " (a canary region next to it changed)"}};
      for (std::size_t k = 0; k < inputs.size() + task.params.size(); ++k) {
        const at::Tensor& now = k < inputs.size() ? inputs[k].t : task.params[k - inputs.size()].t;
        const at::Tensor& before = k < inputs.size() ? input_copies[k] : param_copies[k - inputs.size()];
        if (!now.view({-1})
                 .eq(before.view({-1}))
                 .logical_or(now.view({-1}).ne(now.view({-1})))
                 .all()
                 .item<bool>())
          return {{"ok", true},
                  {"outcome", "output_mismatch"},
                  {"sub_kind", "input_modified"},
                  {"trials_passed", i},
                  {"message",
                   "the kernel modified its input '" + task.in_specs[k].name + "'; inputs are read-only"}};
      }
      auto expected = task.ref.run(inputs);
      if (expected.size() != outs.size())
        throw std::runtime_error("the reference returned a different number of outputs than at load");
      for (std::size_t k = 0; k < outs.size(); ++k) {
        Comparison cmp = compare(snapshot[k], expected[k].t, tol);
        max_abs = std::max(max_abs, cmp.max_abs);
        max_rel = std::max(max_rel, cmp.max_rel);
        if (!cmp.ok) {
          result["outcome"] = "output_mismatch";
          result["sub_kind"] = cmp.sub_kind;
          result["message"] = "trial " + std::to_string(i + 1) + " of " + std::to_string(trials) +
                              ", output '" + task.out_specs[k].name + "': " + cmp.message;
          result["trials_passed"] = i;
          result["max_abs_err"] = cmp.max_abs;
          result["max_rel_err"] = cmp.max_rel;
          result["mismatch_fraction"] =
              static_cast<double>(cmp.mismatched) / static_cast<double>(std::max<int64_t>(1, cmp.numel));
          result["worst_index"] = cmp.worst_index;
          result["expected"] = cmp.expected;
          result["actual"] = cmp.actual;
          result["check_ms"] = ms_since(t0);
          return result;
        }
      }
    }
    result["outcome"] = "pass";
    result["trials_passed"] = trials;
    result["max_abs_err"] = max_abs;
    result["max_rel_err"] = max_rel;
    result["mismatch_fraction"] = 0.0;
    result["check_ms"] = ms_since(t0);
    return result;
  }

  struct Timed {
    Stats device;  ///< CUDA events on the runner's stream (CPU: the host clock)
    Stats host;    ///< host clock from launch to device-wide synchronisation
  };

  // Times fn: warm-up, then repetitions until `reps` or the time budget (at least min_reps),
  // each preceded by an L2 flush. GPU: CUDA events around the call on the runner's stream;
  // then up to 10 calls on a host clock ending in a device-wide synchronisation, so that
  // work hidden on another stream is still seen (see bench()).
  template <class F>
  Timed time_fn(F&& fn, int warmup, int reps, int min_reps, double budget_ms) {
    for (int i = 0; i < warmup; ++i) fn();
    sync();
    std::vector<double> dev, host;
    auto start_all = Clock::now();
#ifdef KFORGE_RUNNER_CUDA
    cudaEvent_t a = nullptr, b = nullptr;
    if (cuda()) {
      cudaEventCreate(&a);
      cudaEventCreate(&b);
    }
#endif
    std::vector<char> cpu_flush;
    if (!cuda()) cpu_flush.assign(64u << 20, 0);
    for (int r = 0; r < reps; ++r) {
      if (r >= min_reps && ms_since(start_all) > budget_ms) break;
#ifdef KFORGE_RUNNER_CUDA
      if (cuda()) {
        // The flush runs while the call is being launched, so launch latency does not
        // show in the events (as in triton.testing.do_bench).
        auto s = static_cast<cudaStream_t>(stream());
        flush_.zero_();
        cudaEventRecord(a, s);
        fn();
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        dev.push_back(ms);
        continue;
      }
#endif
      std::memset(cpu_flush.data(), r & 0xff, cpu_flush.size());
      auto h0 = Clock::now();
      fn();
      double ms = ms_since(h0);
      host.push_back(ms);
      dev.push_back(ms);
    }
#ifdef KFORGE_RUNNER_CUDA
    if (cuda()) {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
      // Host clock from the call to a device-wide synchronisation: work hidden on another
      // stream escapes the events above but not this.
      for (int r = 0; r < std::min(10, std::max(1, static_cast<int>(dev.size()))); ++r) {
        flush_.zero_();
        cudaDeviceSynchronize();
        auto h0 = Clock::now();
        fn();
        cudaDeviceSynchronize();
        host.push_back(ms_since(h0));
      }
    }
#endif
    return {stats_of(dev), stats_of(host)};
  }

  static json stats_json(const Stats& s) {
    return {{"median_ms", s.median}, {"p10_ms", s.p10}, {"p90_ms", s.p90}, {"mean_ms", s.mean},
            {"min_ms", s.min},       {"cv", s.cv},      {"reps", s.reps}};
  }

  json triton_bench(const json& req) {
    require_task();
    auto inputs = cur().ref.make_inputs(req.value("seed", 2000));
    return {{"ok", true}, {"ms", cur().ref.triton_do_bench(inputs)}};
  }

  json bench(const json& req) {
    Reference& ref = cur().ref;
    auto t0 = Clock::now();
    int warmup = req.value("warmup", 5), reps = req.value("reps", 100), min_reps = req.value("min_reps", 10);
    double budget = req.value("budget_ms", 5000.0);
    std::string baseline = req.value("baseline", "eager");
    bool want_candidate = req.contains("artifact");
    auto inputs = ref.make_inputs(req.value("seed", 2000));
    json j{{"ok", true}};
    std::vector<std::string> flags;
    if (want_candidate) {
      auto c = candidate(req.at("artifact").get<std::string>());
      if (auto* f = std::get_if<Failure>(&c)) return failure_json(*f);
      KfForward fn = std::get<KfForward>(c);
      auto outs = fresh_outputs();
      auto kin = kf_inputs(inputs);
      std::vector<kf_tensor> kout;
      for (auto& g : outs) kout.push_back(to_kf(g.view));
      if (auto f = call(fn, kin, kout, nullptr, nullptr)) return failure_json(*f);
      std::optional<Failure> failed;
      auto t = time_fn(
          [&] {
            if (failed) return;
            int rc = fn(kin.data(), static_cast<int>(kin.size()), kout.data(), static_cast<int>(kout.size()),
                        stream());
            if (rc != 0)
              failed =
                  Failure{"runtime_error", "nonzero_return", "kf_forward returned " + std::to_string(rc)};
          },
          warmup, reps, min_reps, budget);
      if (auto f = call(fn, kin, kout, nullptr, nullptr)) return failure_json(*f);  // surfaces CUDA errors
      if (failed) return failure_json(*failed);
      double cand_ms = t.device.median;
      // Work hidden on another stream escapes the events but not the host clock.
      if (cuda() && t.host.median > 2.0 * t.device.median + 0.1) {
        flags.push_back("work_outside_stream");
        cand_ms = t.host.median;
      }
      j["candidate"] = stats_json(t.device);
      j["candidate"]["host_median_ms"] = t.host.median;
      j["candidate_ms"] = cand_ms;
    }
    auto r = time_fn([&] { ref.run(inputs); }, warmup, reps, min_reps, budget);
    j["reference"] = stats_json(r.device);
    j["reference_ms"] = r.device.median;
    if (baseline == "compile") {
      auto rc = time_fn([&] { ref.run(inputs, true); }, std::max(warmup, 3), reps, min_reps, budget);
      j["reference_compile"] = stats_json(rc.device);
    }
    if (want_candidate && j["candidate_ms"].get<double>() > 0)
      j["speedup"] = r.device.median / j["candidate_ms"].get<double>();
    j["flags"] = flags;
    j["bench_ms"] = ms_since(t0);
    return j;
  }
};

void add_site_paths() {
  auto sys = py::module_::import("sys");
  std::string sites = KFORGE_PYTHON_SITE;
  if (const char* extra = std::getenv("KFORGE_PYTHONPATH")) sites = std::string(extra) + ":" + sites;
  std::stringstream ss(sites);
  std::string p;
  py::list path = sys.attr("path");
  while (std::getline(ss, p, ':'))
    if (!p.empty() && !path.contains(p)) path.append(p);
}

}  // namespace

int main(int argc, char** argv) {
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
  try {
    py::module_::import("torch");
  } catch (py::error_already_set& e) {
    reply({{"ok", false},
           {"error", "python_exception"},
           {"message", "import torch failed: " + python_traceback(e)}});
    return 3;
  }
  Worker w;
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
    if (r.value("fatal", false)) {
      std::fflush(nullptr);
      std::_Exit(3);  // the CUDA context is poisoned: the client replaces this worker
    }
  }
  std::free(buf);
  return 0;
}
