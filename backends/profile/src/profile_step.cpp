#include "kforge/backends/profile_step.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "kforge/backends/profile_gate.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/compile_cache.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

/// The first "==ERROR==" line of ncu's output, without the marker; "" when none.
std::string ncu_error_line(const std::string& text) {
  for (const auto& line : split_lines(text))
    if (auto p = line.find("==ERROR=="); p != std::string::npos) return trim(line.substr(p + 9));
  return "";
}

/// The profiled process's own last words: its output without ncu's "==PROF==" / "==ERROR=="
/// lines and its gate's line, the last `max` characters ("" when none).
std::string target_output_tail(const std::string& out, const std::string& err, std::size_t max) {
  std::string kept;
  for (const auto& line : split_lines(err + "\n" + out))
    if (!trim(line).empty() && line.rfind("==", 0) != 0 && trim(line) != kProfileGateReadyLine)
      kept += trim(line) + "\n";
  return kept.size() > max ? kept.substr(kept.size() - max) : kept;
}

/// What a finished ncu run left: its report, or why not (NcuLaunch::finish's errors).
NcuRun read_run(const sandbox::Result& r, const fs::path& report_csv, std::chrono::milliseconds limit) {
  NcuRun run;
  run.wall_ms = static_cast<double>(r.wall.count());
  std::error_code ec;
  const std::string csv = fs::exists(report_csv, ec) ? read_file(report_csv) : "";
  run.report = parse_ncu_csv(csv);
  if (!run.report.empty()) return run;
  std::string why = ncu_error_line(csv + "\n" + r.out + "\n" + r.err);
  // "The application returned an error code (1)": say what the profiled process said.
  if (why.find("returned an error code") != std::string::npos)
    if (const std::string tail = trim(target_output_tail(r.out, r.err, 400)); !tail.empty())
      why += ": " + tail;
  if (r.status == sandbox::Status::failed_to_start)
    why = "ncu could not start: " + r.error;
  else if (r.status == sandbox::Status::timed_out)
    why = "ncu did not finish within " + std::to_string(limit.count() / 1000) + " s";
  else if (why.empty() && !r.ok())
    why = "the profiled process failed (exit " + std::to_string(r.exit_code) +
          "): " + truncate_middle(trim(r.err.empty() ? r.out : r.err), 300);
  else if (why.empty())
    why = "ncu reported no kernel";
  run.error = why;
  return run;
}

constexpr std::size_t kTargetOutputBytes = 64 * 1024;

/// start_ncu's launch: ncu as a sandboxed child, its target waiting at the gate file.
class SandboxNcuLaunch final : public NcuLaunch {
 public:
  SandboxNcuLaunch(const sandbox::Spec& spec, fs::path report_csv, fs::path gate, fs::path scratch)
      : report_csv_(std::move(report_csv)), gate_(std::move(gate)), scratch_(std::move(scratch)) {
    child_ = sandbox::LineChild::start(spec, &start_error_);
  }
  ~SandboxNcuLaunch() override {
    child_.reset();  // kills its process group when unfinished
    clean();
  }
  SandboxNcuLaunch(const SandboxNcuLaunch&) = delete;
  SandboxNcuLaunch& operator=(const SandboxNcuLaunch&) = delete;

  bool ready(std::chrono::milliseconds limit) override {
    return child_ && read_until(std::chrono::steady_clock::now() + limit, true) == Read::ready;
  }

  NcuRun finish(std::chrono::milliseconds limit) override {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    sandbox::Result r;
    if (!child_) {
      r.error = start_error_;
    } else {
      try {
        write_file(gate_, "");
        r = await(t0 + limit);
      } catch (const std::exception& e) {
        r.error = std::string("cannot open its gate: ") + e.what();
      }
    }
    r.wall = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    child_.reset();
    clean();
    return read_run(r, report_csv_, limit);
  }

 private:
  enum class Read { ready, ended, deadline };
  /// Reads the child's stdout into out_ (its last kTargetOutputBytes) until it ends, `deadline`
  /// passes or, with `stop_at_ready`, its gate's line (kProfileGateReadyLine) came.
  Read read_until(std::chrono::steady_clock::time_point deadline, bool stop_at_ready) {
    using namespace std::chrono;
    for (;;) {
      const auto left = duration_cast<milliseconds>(deadline - steady_clock::now());
      if (left <= milliseconds(0)) return Read::deadline;
      if (auto line = child_->read_line(std::min(left, milliseconds(200)))) {
        keep(*line);
        if (stop_at_ready && trim(*line) == kProfileGateReadyLine) return Read::ready;
        continue;
      }
      if (!child_->alive()) return Read::ended;
      std::this_thread::sleep_for(milliseconds(2));  // stdout closed: the process is ending
    }
  }

  /// Reads the child's stdout until it exits or `deadline` passes (then its group is killed:
  /// timed_out).
  sandbox::Result await(std::chrono::steady_clock::time_point deadline) {
    const bool ended = read_until(deadline, false) == Read::ended;
    sandbox::Result r = ended ? child_->wait() : child_->terminate(std::chrono::milliseconds(1000));
    if (!ended) r.status = sandbox::Status::timed_out;
    r.out = out_ + r.out;
    return r;
  }

  /// Keeps a line of the target's stdout (the last kTargetOutputBytes).
  void keep(const std::string& line) {
    out_ += line + "\n";
    if (out_.size() > kTargetOutputBytes) out_.erase(0, out_.size() - kTargetOutputBytes);
  }

  void clean() {
    std::error_code ec;
    fs::remove(gate_, ec);
    fs::remove_all(scratch_, ec);
  }

  fs::path report_csv_, gate_, scratch_;
  std::unique_ptr<sandbox::LineChild> child_;
  std::string start_error_;
  std::string out_;  ///< the target's stdout so far (its last kTargetOutputBytes)
};

/// deferred_start's launch: the fake's whole run in finish().
class DeferredNcuLaunch final : public NcuLaunch {
 public:
  DeferredNcuLaunch(NcuRunFn run, std::vector<NcuMetric> metrics, std::vector<std::string> target,
                    NcuOptions opt)
      : run_(std::move(run)),
        metrics_(std::move(metrics)),
        target_(std::move(target)),
        opt_(std::move(opt)) {}
  NcuRun finish(std::chrono::milliseconds limit) override { return run_(metrics_, target_, opt_, limit); }

 private:
  NcuRunFn run_;
  std::vector<NcuMetric> metrics_;
  std::vector<std::string> target_;
  NcuOptions opt_;
};

}  // namespace

std::unique_ptr<NcuLaunch> start_ncu(const std::vector<NcuMetric>& metrics,
                                     const std::vector<std::string>& target, const NcuOptions& opt) {
  sandbox::Spec spec;
  spec.argv = ncu_argv(metrics, target, opt);
  spec.limits.max_line_bytes = kTargetOutputBytes;
  // ncu talks to the process it profiles over loopback; a private network namespace would
  // leave it without one. The profiled candidate is still confined (no sockets: seccomp).
  spec.isolate_network = false;
  fs::path scratch = opt.report_csv, gate = opt.report_csv;
  scratch += ".tmp";
  gate += ".gate";
  std::error_code ec;
  fs::remove(gate, ec);
  fs::remove_all(scratch, ec);
  fs::create_directories(scratch, ec);
  fs::remove(opt.report_csv, ec);
  spec.env_set["TMPDIR"] = scratch.string();
  spec.env_set["KFORGE_PROFILE_SCRATCH"] = scratch.string();
  spec.env_set[kProfileGateEnv] = gate.string();
  return std::make_unique<SandboxNcuLaunch>(spec, opt.report_csv, gate, scratch);
}

NcuRun run_ncu(const std::vector<NcuMetric>& metrics, const std::vector<std::string>& target,
               const NcuOptions& opt, std::chrono::milliseconds timeout) {
  return start_ncu(metrics, target, opt)->finish(timeout);
}

NcuStartFn deferred_start(NcuRunFn run) {
  return [run = std::move(run)](const std::vector<NcuMetric>& metrics, const std::vector<std::string>& target,
                                const NcuOptions& opt) -> std::unique_ptr<NcuLaunch> {
    return std::make_unique<DeferredNcuLaunch>(run, metrics, target, opt);
  };
}

fs::path NcuReferenceCache::default_dir() {
  return sandbox::CompileCache::default_dir().parent_path() / "ncu_reference";
}

std::string NcuReferenceCache::key(const TaskRef& task, const std::string& environment,
                                   const std::vector<NcuMetric>& metrics) {
  Hasher h;
  h.update(task.cache_key()).update("\n").update(environment).update("\n");
  for (const auto& m : metrics) h.update(m.name).update(",");
  return h.hex();
}

std::optional<ProfileReport> NcuReferenceCache::get(const std::string& key) const {
  std::error_code ec;
  const fs::path f = dir_ / (key + ".csv");
  if (!fs::is_regular_file(f, ec)) return std::nullopt;
  ProfileReport r = parse_ncu_csv(read_file(f));
  if (r.empty()) return std::nullopt;
  return r;
}

void NcuReferenceCache::put(const std::string& key, const std::string& csv) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::path tmp = dir_ / (key + ".csv.tmp" + std::to_string(::getpid()));
  try {
    write_file(tmp, csv);
    fs::rename(tmp, dir_ / (key + ".csv"));
  } catch (const std::exception& e) {
    fs::remove(tmp, ec);
    spdlog::warn("reference profile not cached in {}: {}", dir_.string(), e.what());
  }
}

NcuProfiler::NcuProfiler(fs::path ncu, std::vector<NcuMetric> metrics, NcuProfilerOptions options)
    : ncu_(std::move(ncu)),
      metrics_(std::move(metrics)),
      reference_metrics_(reference_metrics(metrics_)),
      opt_(std::move(options)) {
  if (!opt_.start) opt_.start = start_ncu;
}

namespace {

/// One line of a program's output, run in the sandbox; "" when it cannot run.
std::string first_output_line(std::vector<std::string> argv) {
  sandbox::Spec spec;
  spec.argv = std::move(argv);
  spec.limits.wall = std::chrono::milliseconds(20'000);
  const sandbox::Result r = sandbox::run(spec);
  if (!r.ok()) return "";
  std::string last;
  for (const auto& l : split_lines(r.out))
    if (!trim(l).empty()) last = trim(l);  // ncu --version ends with its version line
  return last;
}

/// The device bytes of one call: inputs, parameters and outputs (what ncu's kernel replay may
/// save and restore).
double call_bytes(const LoadResult& lr) {
  double b = static_cast<double>(lr.input_bytes);
  for (const auto& o : lr.outputs) {
    double n = 1;
    for (auto d : o.shape) n *= static_cast<double>(d);
    b += n * (o.dtype == "float64" || o.dtype == "int64" || o.dtype == "complex64"  ? 8
              : o.dtype == "complex128"                                             ? 16
              : o.dtype == "float16" || o.dtype == "bfloat16" || o.dtype == "int16" ? 2
              : o.dtype == "bool" || o.dtype == "uint8" || o.dtype == "int8"        ? 1
                                                                                    : 4);
  }
  return b;
}

/// Appends `n` to the profile's note ("; " between notes).
void add_note(NcuProfile& p, const std::string& n) {
  p.note += std::string(p.note.empty() ? "" : "; ") + n;
}

std::string seconds(std::chrono::milliseconds ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f s", static_cast<double>(ms.count()) / 1000);
  return b;
}

}  // namespace

std::string NcuProfiler::environment(RunnerClient& runner) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!environment_.empty()) return environment_;
  }
  std::string env;
  if (opt_.environment) {
    env = opt_.environment();
  } else {
    // The GPU (name), the driver, and the toolchain that makes and reads the reference's
    // kernels: torch and its CUDA, ncu.
    const auto said = runner.hello();
    auto hello = said ? nlohmann::json::parse(said.value(), nullptr, false) : nlohmann::json();
    std::string gpu;
    if (hello.is_object() && hello.contains("devices") && hello["devices"].is_array())
      for (const auto& d : hello["devices"]) gpu += d.value("name", std::string()) + ";";
    env = "gpu=" + gpu + " driver=" +
          first_output_line({"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"}) +
          " torch=" + (hello.is_object() ? hello.value("torch", std::string()) : "") +
          " cuda=" + (hello.is_object() ? hello.value("torch_cuda", std::string()) : "") +
          " ncu=" + first_output_line({ncu_.string(), "--version"});
  }
  std::lock_guard<std::mutex> lock(mu_);
  environment_ = env;
  return env;
}

double NcuProfiler::device_memory(RunnerClient& runner) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (device_memory_ >= 0) return device_memory_;
  }
  // The smallest GPU the runner lists (it uses one of them).
  double m = 0;
  const auto said = runner.hello();
  auto hello = said ? nlohmann::json::parse(said.value(), nullptr, false) : nlohmann::json();
  if (hello.is_object() && hello.contains("devices") && hello["devices"].is_array())
    for (const auto& d : hello["devices"])
      if (d.is_object() && d.contains("memory_bytes") && d["memory_bytes"].is_number()) {
        const double b = d["memory_bytes"].get<double>();
        m = m == 0 ? b : std::min(m, b);
      }
  std::lock_guard<std::mutex> lock(mu_);
  device_memory_ = m;
  return m;
}

namespace {

/// "6.0 GiB", "256 MiB", "512 KiB".
std::string binary_bytes(double bytes) {
  char b[32];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(b, sizeof b, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024)
    std::snprintf(b, sizeof b, "%.0f MiB", bytes / (1024.0 * 1024));
  else
    std::snprintf(b, sizeof b, "%.0f KiB", bytes / 1024);
  return b;
}

}  // namespace

std::optional<ScaledTask> NcuProfiler::scaled(RunnerClient& runner, const TaskRef& task) {
  if (!opt_.scale || task.test_block()) return std::nullopt;
  const Expected<LoadResult> loaded = runner.load(task);  // loaded already: selected
  if (!loaded || static_cast<double>(loaded->input_bytes) <= opt_.full_input_bytes) return std::nullopt;
  const LoadResult& full = loaded.value();
  auto s = opt_.scale(task, opt_.scaled_input_bytes);
  if (!s) return std::nullopt;
  s->description = "ncu profiled the call on smaller inputs than the judge's: the task's " +
                   binary_bytes(static_cast<double>(full.input_bytes)) + " of inputs are above " +
                   binary_bytes(opt_.full_input_bytes) + ", so its get_inputs() constants were scaled (" +
                   s->description +
                   ") for both the candidate and the reference; findings and kernel times are of that call";
  return s;
}

NcuProfile NcuProfiler::profile(RunnerClient& runner, const TaskRef& task, const fs::path& artifact,
                                const fs::path& dir, HostKind host) {
  return finish(runner, *start(runner, task, artifact, dir, host));
}

std::unique_ptr<NcuStarted> NcuProfiler::start(RunnerClient& runner, const TaskRef& full_task,
                                               const fs::path& artifact, const fs::path& dir, HostKind host) {
  auto s = std::make_unique<NcuStarted>();
  s->dir = dir;
  // Before the device's timed lock: the judge's files (under a shared hold) and both runs
  // started, each waiting at its gate.
  const auto smaller = scaled(runner, full_task);
  const TaskRef& task = smaller ? smaller->task : full_task;
  s->scaled_note = smaller ? smaller->description : "";
  auto targets = runner.profile_targets(task, artifact, dir, 3000, host);
  if (!targets) {
    s->profile.note = "not profiled: " + targets.failure().message +
                      (s->scaled_note.empty() ? "" : " (" + s->scaled_note + ")");
    return s;
  }
  NcuOptions opt;
  opt.ncu = ncu_;
  opt.profile_from_start = false;
  opt.launch_count = kMaxLaunches;
  opt.cache_control = "all";
  opt.report_csv = dir / "ncu_candidate.csv";
  // A passing candidate's call is idempotent (the judge verified that it leaves its inputs and
  // parameters intact and writes every output element); kforge-host restarts cheaply, the
  // Triton host (torch, Triton, its JIT) does not.
  const bool cheap_restart = host == HostKind::native;
  s->profile.replay_mode = opt.replay_mode = choose_replay_mode(
      true, cheap_restart, call_bytes(runner.load(task).value_or(LoadResult{})), device_memory(runner));
  s->candidate = opt_.start(metrics_, targets->candidate, opt);
  s->key = NcuReferenceCache::key(task, environment(runner), reference_metrics_);
  NcuOptions ref_opt = opt;
  ref_opt.report_csv = dir / "ncu_reference.csv";
  ref_opt.replay_mode = "kernel";  // PyTorch's start-up on every pass would cost more than ncu's copies
  if (auto cached = cached_reference(s->key)) {
    s->profile.reference = std::move(*cached);
    s->profile.reference_cached = true;
  } else {
    s->reference = opt_.start(reference_metrics_, targets->reference, ref_opt);
  }
  return s;
}

NcuProfile NcuProfiler::finish(RunnerClient& runner, NcuStarted& s) {
  NcuProfile& p = s.profile;
  if (!s.candidate) return std::move(p);
  // Their start-up (ncu's, the process's, its imports) over before the lock is taken; a run
  // that ended or hangs before its gate is finished below all the same (finish() says why).
  const auto ready_until = std::chrono::steady_clock::now() + opt_.budget;
  for (NcuLaunch* l : {s.candidate.get(), s.reference.get()})
    if (l)
      l->ready(std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                          ready_until - std::chrono::steady_clock::now())));
  // Nsight Compute times kernels: the device's timed lock is held from here to the end, its
  // wait outside the budget.
  TimedHold held = runner.hold_timed("ncu");
  p.lock_wait_ms = held.waited_ms();
  const auto t0 = std::chrono::steady_clock::now();
  const auto left = [&] {
    return opt_.budget -
           std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  };
  finish_candidate(*s.candidate, left(), p);
  s.candidate.reset();
  // The inputs' copy is as large as the task's inputs: an overnight run keeps none of them.
  std::error_code ec;
  fs::remove(s.dir / "profile_tensors.bin", ec);
  if (!s.scaled_note.empty()) add_note(p, s.scaled_note);
  if (s.reference) finish_reference(*s.reference, s.key, s.dir / "ncu_reference.csv", left(), p);
  s.reference.reset();  // its process tree gone before the lock is released
  return std::move(p);
}

void NcuProfiler::finish_candidate(NcuLaunch& launch, std::chrono::milliseconds limit, NcuProfile& p) {
  NcuRun c = launch.finish(limit);
  p.candidate = std::move(c.report);
  p.profiler_ms = c.wall_ms;
  if (!c.error.empty())
    p.note = "ncu: " + c.error +
             (c.wall_ms >= static_cast<double>(limit.count())
                  ? " (the profile budget of " + seconds(opt_.budget) + ")"
                  : "");
  if (p.candidate.kernels.size() >= static_cast<std::size_t>(kMaxLaunches))
    p.note = "ncu profiled only the first " + std::to_string(kMaxLaunches) + " kernel launches of the call";
}

std::optional<ProfileReport> NcuProfiler::cached_reference(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = references_.find(key); it != references_.end()) return it->second;
  }
  if (opt_.reference_cache.empty()) return std::nullopt;
  auto r = NcuReferenceCache(opt_.reference_cache).get(key);
  if (r) {
    std::lock_guard<std::mutex> lock(mu_);
    references_[key] = *r;
  }
  return r;
}

void NcuProfiler::finish_reference(NcuLaunch& launch, const std::string& key, const fs::path& report_csv,
                                   std::chrono::milliseconds limit, NcuProfile& p) {
  if (limit <= std::chrono::milliseconds(0)) {
    add_note(p, "reference not profiled: the profile budget of " + seconds(opt_.budget) +
                    " was spent on the candidate; a later pass profiles it");
    return;
  }
  NcuRun r = launch.finish(limit);
  p.profiler_ms += r.wall_ms;
  std::error_code ec;
  if (r.error.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    references_[key] = r.report;
    if (!opt_.reference_cache.empty() && fs::exists(report_csv, ec))
      NcuReferenceCache(opt_.reference_cache).put(key, read_file(report_csv));
  } else {
    add_note(p, "reference not profiled: " + r.error +
                    (r.wall_ms >= static_cast<double>(limit.count())
                         ? " (what was left of the profile budget of " + seconds(opt_.budget) + ")"
                         : ""));
  }
  p.reference = std::move(r.report);
}

}  // namespace kforge::backends
