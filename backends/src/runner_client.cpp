#include "kforge/backends/runner_client.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "kforge/backends/python_errors.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/utf8.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace {
/// The check's and bench's "allow_ops": op names separated by commas.
std::string join_ops(const std::vector<std::string>& ops) {
  std::string r;
  for (const auto& o : ops) r += (r.empty() ? "" : ",") + o;
  return r;
}
}  // namespace

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::filesystem::path default_runner_path() {
  if (const char* p = std::getenv("KFORGE_RUNNER"); p && *p) return p;
  return KFORGE_RUNNER_DEFAULT;
}

std::string TaskRef::cache_key() const {
  return Hasher().update(id).update(source).update(module_mode).hex();
}

// The worker's answer to one request, or how the worker died trying.
struct RunnerClient::Reply {
  enum Kind { ok, timed_out, died, failed_to_start } kind = ok;
  json body;
  std::string message;   ///< for died / failed_to_start / timed_out
  std::string sub_kind;  ///< for died: segfault, signal, exit
  int term_signal = 0;   ///< for died by a signal: its number
};

RunnerClient::RunnerClient(RunnerConfig cfg) : cfg_(std::move(cfg)) {
  if (cfg_.runner.empty()) cfg_.runner = default_runner_path();
}

RunnerClient::~RunnerClient() {
  if (child_) {
    child_->write_line(R"({"cmd":"quit"})");
    child_->terminate(std::chrono::milliseconds(200));
  }
}

void RunnerClient::set_child(std::unique_ptr<sandbox::LineChild> c) {
  {
    std::lock_guard lk(child_mu_);
    std::swap(child_, c);
  }
  c.reset();  // the old worker, reaped outside the lock
}

void RunnerClient::kill_worker() {
  if (child_) child_->terminate(std::chrono::milliseconds(200));
  set_child(nullptr);
  loaded_key_.clear();
  candidates_on_worker_ = 0;
  task_requests_on_worker_ = 0;
}

bool RunnerClient::ensure_started(std::string* error) {
  if (child_ && child_->alive()) return true;
  set_child(nullptr);
  loaded_key_.clear();
  sandbox::Spec spec;
  spec.argv = {cfg_.runner.string()};
  spec.limits.max_file_bytes = 0;
  spec.isolate_network = true;
  spec.network_without_userns_as_root = true;  // its candidate hosts then become "nobody"
  if (const char* v = std::getenv("KFORGE_PYTHONPATH")) spec.env_set["KFORGE_PYTHONPATH"] = v;
  // The judge's choice of candidate hosts (runner_main.cpp), for tests and other installs.
  for (const char* v :
       {"KFORGE_HOST", "KFORGE_HOST_PYTHON", "KFORGE_TRITON_HOST", "KFORGE_PYCONFINE", "KFORGE_TRITON_ZYGOTE",
        // the timed lock's directory and its test log (timed_lock.hpp)
        "KFORGE_LOCK_DIR", "KFORGE_TIMED_LOG"})
    spec.env_allow.push_back(v);
  set_child(sandbox::LineChild::start(spec, error));
  if (!child_) return false;
  if (loading_ && abandoned_) {  // abandon_loads came while no worker was there to kill
    *error = "abandoned";
    kill_worker();
    return false;
  }
  ++workers_started_;
  candidates_on_worker_ = 0;
  task_requests_on_worker_ = 0;
  auto line = child_->read_line(cfg_.start_timeout);
  json j;
  if (line) {
    try {
      j = json::parse(*line);
    } catch (const std::exception&) {
    }
  }
  if (!line || !j.value("ready", false)) {
    *error = "kforge-runner did not start: " + (line ? *line : std::string("no ready line")) + "\n" +
             child_->stderr_tail();
    kill_worker();
    return false;
  }
  spdlog::debug("runner {} started (pid {}) for {}", cfg_.runner.string(), child_->pid(), cfg_.device);
  return true;
}

RunnerClient::Reply RunnerClient::request(nlohmann::json req, std::chrono::milliseconds timeout) {
  Reply r;
  std::string err;
  if (!ensure_started(&err)) {
    r.kind = Reply::failed_to_start;
    r.message = err;
    return r;
  }
  // Every request carries a fresh id and its reply must echo it: a stale or stray line on the
  // protocol stream is never taken for the answer.
  const std::string id = std::to_string(workers_started_) + "." + std::to_string(++request_seq_);
  req["id"] = id;
  // Whether this is the worker's first request about a task: a reference that fails then
  // failed on its own, not because an earlier task left the worker broken.
  const std::string cmd = req.value("cmd", std::string());
  if (cmd != "hello" && cmd != "peaks" && cmd != "prewarm")
    last_request_fresh_ = task_requests_on_worker_++ == 0;
  auto t0 = Clock::now();
  if (child_->write_line(dump_json(req))) {  // a suite file may hold any bytes
    if (auto out = child_->read_line(timeout)) {
      try {
        r.body = json::parse(*out);
        if (r.body.value("id", std::string()) == id) return r;
        r.message =
            "kforge-runner answered request " + id + " with id '" + r.body.value("id", std::string()) + "'";
      } catch (const std::exception& e) {
        r.message = std::string("unreadable reply from kforge-runner: ") + e.what();
      }
      r.kind = Reply::died;
      r.sub_kind = "protocol";
      kill_worker();
      return r;
    }
  }
  if (Clock::now() - t0 >= timeout) {
    r.kind = Reply::timed_out;
    r.message = "no answer within " + std::to_string(timeout.count()) + " ms; the worker was killed";
    kill_worker();
    return r;
  }
  // The worker is gone: find out how.
  sandbox::Result res = child_->wait();
  r.kind = Reply::died;
  if (res.status == sandbox::Status::signalled) {
    r.sub_kind = res.term_signal == SIGSEGV || res.term_signal == SIGBUS ? "segfault" : "signal";
    r.term_signal = res.term_signal;
    r.message = std::string("the worker was killed by signal ") + std::to_string(res.term_signal) + " (" +
                strsignal(res.term_signal) + ")";
  } else {
    r.sub_kind = "exit";
    r.message =
        "the worker exited with status " + std::to_string(res.exit_code) + " in the middle of the call";
  }
  std::string tail = child_->stderr_tail();
  if (!tail.empty()) r.message += "\nworker stderr (tail):\n" + std::string(utf8_suffix(tail, 6000));
  set_child(nullptr);
  loaded_key_.clear();
  task_requests_on_worker_ = 0;
  return r;
}

namespace {
TensorSpec spec_of(const json& j) {
  return {j.value("name", ""), j.value("kind", ""), j.value("dtype", ""),
          j.value("shape", std::vector<int64_t>{})};
}
TimingStats stats_of(const json& j) {
  TimingStats s;
  s.median_ms = j.value("median_ms", 0.0);
  s.p10_ms = j.value("p10_ms", 0.0);
  s.p90_ms = j.value("p90_ms", 0.0);
  s.mean_ms = j.value("mean_ms", 0.0);
  s.min_ms = j.value("min_ms", 0.0);
  s.cv = j.value("cv", 0.0);
  s.reps = j.value("reps", 0);
  return s;
}
/// A numeric reply field; JSON has no NaN or infinity (they arrive as null): infinity then.
double number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  return it->is_number() ? it->get<double>() : std::numeric_limits<double>::infinity();
}
/// The reply's "phases" object (phase name -> ms); empty when absent.
std::map<std::string, double> phases_of(const json& j) {
  std::map<std::string, double> m;
  if (auto it = j.find("phases"); it != j.end() && it->is_object())
    for (auto& [k, v] : it->items())
      if (v.is_number()) m[k] = v.get<double>();
  return m;
}
Outcome outcome_of(const json& j) {
  auto o = outcome_from_string(j.value("outcome", "runtime_error"));
  return o ? *o : Outcome::runtime_error;
}
/// An error reply's typed failure: its "error" field parsed, an unknown value a protocol failure.
Failure reply_failure(const json& body) {
  const std::string error = body.value("error", std::string("runner"));
  const std::string message = body.value("message", std::string());
  if (auto e = judge_error_from_string(error)) return judge_failure(*e, message);
  return {FailureKind::judge, "judge_protocol",
          "the judge's reply has an unknown \"error\" value '" + error.substr(0, 80) + "': " + message};
}
/// A load that failed (LoadResult): the reference's fault, whatever the worker said.
Failure load_failure(const std::string& error) {
  return {FailureKind::reference, "reference_failed", error};
}
}  // namespace

std::string RunnerClient::reply_kind_name(const Reply& r) {
  switch (r.kind) {
    case Reply::timed_out:
      return "judge_timeout";
    case Reply::died:
      return r.sub_kind == "protocol" ? "judge_protocol" : "judge_died";
    case Reply::failed_to_start:
      return "runner_failed";
    case Reply::ok:
      break;
  }
  return "runner";
}

Expected<std::string> RunnerClient::hello() {
  Reply r = request(json{{"cmd", "hello"}}, cfg_.start_timeout);
  if (r.kind != Reply::ok) return Failure{FailureKind::judge, reply_kind_name(r), r.message};
  return r.body.dump();
}

bool RunnerClient::prewarm(HostKind host) {
  return request(json{{"cmd", "prewarm"}, {"host", std::string(to_string(host))}, {"device", cfg_.device}},
                 cfg_.start_timeout)
             .kind == Reply::ok;
}

std::string RunnerClient::timed_lock_name() {
  if (!lock_name_.empty()) return lock_name_;
  if (cfg_.device.rfind("cuda:", 0) != 0) return lock_name_ = backends::timed_lock_name(cfg_.device);
  const Expected<std::string> said = hello();
  const json h = said ? json::parse(said.value(), nullptr, false) : json();
  const int index = std::atoi(cfg_.device.c_str() + 5);
  if (h.is_object() && h.contains("devices") && h["devices"].is_array())
    for (const auto& d : h["devices"])
      if (d.is_object() && d.value("index", -1) == index && d.contains("timed_lock") &&
          d["timed_lock"].is_string())
        return lock_name_ = d["timed_lock"].get<std::string>();
  return backends::timed_lock_name(cfg_.device);  // no hello (yet): by index, not remembered
}

TimedHold RunnerClient::hold_timed(const std::string& what, TimedLock::Mode mode,
                                   std::chrono::milliseconds max_wait) {
  // Under this client's own exclusive hold (the ncu step loads the reference): covered by it,
  // and a second descriptor's shared flock would wait for that hold forever.
  if (mode == TimedLock::Mode::shared && exclusive_holds_ > 0)
    return TimedHold(TimedHold::State::held, 0, "", nullptr);
  const std::string name = timed_lock_name();
  TimedLock& lock = cfg_.timed_lock ? *cfg_.timed_lock : default_timed_lock();
  TimedHold h = lock.acquire(name, what, max_wait, mode);
  static std::atomic<bool> warned{false};
  if (h.state() == TimedHold::State::unavailable && !warned.exchange(true))
    spdlog::warn("{}: timed work is not serialised with other runners on this device: {}", cfg_.device,
                 h.why());
  if (mode == TimedLock::Mode::shared || !h.held()) return h;
  ++exclusive_holds_;
  const double waited = h.waited_ms();
  return TimedHold(TimedHold::State::held, waited, "",
                   [this, inner = std::make_shared<TimedHold>(std::move(h))] {
                     inner->release();
                     --exclusive_holds_;
                   });
}

TimedHold RunnerClient::hold_for_load() {
  for (;;) {
    TimedHold h = hold_timed("load", TimedLock::Mode::shared, std::chrono::milliseconds(100));
    if (h.state() != TimedHold::State::busy || (loading_ && abandoned_)) return h;
  }
}

std::optional<MeasuredPeaks> RunnerClient::measure_peaks() {
  const TimedHold held = hold_timed("peaks");
  Reply r = request(json{{"cmd", "peaks"}, {"device", cfg_.device}, {"timed_lock_held", held.held()}},
                    cfg_.load_timeout);
  if (r.kind != Reply::ok || !r.body.value("ok", false)) return std::nullopt;
  MeasuredPeaks p;
  p.dram_bytes_per_s = number(r.body, "dram_bytes_per_s");
  p.flops_per_s = number(r.body, "flops_per_s");
  p.method = r.body.value("method", std::string());
  return p;
}

Expected<ProfileTargets> RunnerClient::profile_targets(const TaskRef& task, const fs::path& artifact,
                                                       const fs::path& dir, int64_t seed,
                                                       std::optional<HostKind> host) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  std::error_code ec;
  fs::create_directories(dir, ec);
  Reply r = request(json{{"cmd", "profile_setup"},
                         {"artifact", fs::absolute(artifact).string()},
                         {"host", to_string(host.value_or(host_kind_for_artifact(artifact.string())))},
                         {"dir", fs::absolute(dir).string()},
                         {"seed", seed}},
                    cfg_.load_timeout);
  if (r.kind != Reply::ok) return Failure{FailureKind::judge, reply_kind_name(r), r.message};
  if (!r.body.value("ok", false)) return reply_failure(r.body);
  try {
    return ProfileTargets{r.body.at("candidate").get<std::vector<std::string>>(),
                          r.body.at("reference").get<std::vector<std::string>>()};
  } catch (const std::exception& e) {
    return Failure{FailureKind::judge, "judge_protocol", std::string("profile_setup reply: ") + e.what()};
  }
}

std::string RunnerClient::unusable_detail(const TaskRef& task) const {
  auto it = unusable_detail_.find(task.cache_key());
  return it == unusable_detail_.end() ? "" : it->second;
}

void RunnerClient::mark_unusable(const TaskRef& task, const std::string& detail) {
  unusable_detail_[task.cache_key()] = detail;
  unusable_by_id_[task.id] = failure_headline(detail);
}

std::optional<std::string> RunnerClient::known_unusable(const TaskRef& task) const {
  auto it = unusable_detail_.find(task.cache_key());
  if (it == unusable_detail_.end()) return std::nullopt;
  return "loading task " + task.id + " failed: " + it->second;
}

Expected<LoadResult> RunnerClient::ensure_loaded(const TaskRef& task) {
  if (known_unusable(task)) return load_failure(unusable_detail(task));  // costs nothing now
  for (int attempt = 0;; ++attempt) {
    Expected<LoadResult> lr = load_once(task);
    if (lr || (loading_ && abandoned_)) return lr;  // abandoned: neither retried nor the task's fault
    // The reference failed: it may have left the interpreter or the device unusable, so the
    // next request starts a fresh worker. On a worker that had served other tasks the failure
    // may be theirs: once more on a fresh one before the task is unusable.
    const bool fresh = last_request_fresh_;
    kill_worker();
    if (fresh || attempt > 0) {
      mark_unusable(task, lr.failure().message);
      return lr;
    }
    spdlog::info(
        "task {}: the reference failed on a worker that had served other tasks; once more on a "
        "fresh worker",
        task.id);
  }
}

Expected<LoadResult> RunnerClient::load_once(const TaskRef& task) {
  if (candidates_on_worker_ >= cfg_.recycle_after) kill_worker();
  std::string key = task.cache_key();
  if (child_ && loaded_key_ == key) return loaded_;
  // The module mode travels as a field and as a trailing line of the source (which is also the
  // worker's cache key, so one task in two modes is two entries).
  const std::string source = task.source + "\n__kforge_module_mode__ = \"" + task.module_mode + "\"\n";
  json req{{"cmd", "load"},
           {"task", task.id},
           {"file", task.file.string()},
           {"source", source},
           {"device", cfg_.device},
           {"model_seed", 42},
           {"flops", task.flops_expr},
           {"bytes", task.bytes_expr},
           {"module_mode", task.module_mode}};
  const TimedHold shared = hold_for_load();  // the reference runs on the device
  if (loading_ && abandoned_) return Failure{FailureKind::judge, "abandoned", "abandoned while waiting"};
  req["timed_lock_shared"] = shared.held();
  Reply r = request(req, cfg_.load_timeout);
  // A failed load leaves the worker without a current task (it drops it before loading):
  // forget the key, so the next request for any task loads it again.
  loaded_key_.clear();
  if (r.kind != Reply::ok) {
    std::string error = r.message;
    if (r.kind == Reply::died && r.term_signal == SIGKILL) error += "\n" + load_killed_hint(task);
    return load_failure(error);
  }
  if (!r.body.value("ok", false))
    return load_failure(r.body.value("error", std::string("error")) + ": " +
                        r.body.value("message", std::string()));
  LoadResult lr;
  for (const auto& s : r.body["inputs"]) lr.inputs.push_back(spec_of(s));
  for (const auto& s : r.body["outputs"]) lr.outputs.push_back(spec_of(s));
  lr.input_bytes = r.body.value("input_bytes", int64_t{0});
  lr.load_ms = r.body.value("load_ms", 0.0);
  lr.cached = r.body.value("cached", false);
  lr.flops = r.body.value("flops", 0.0);
  lr.bytes = r.body.value("bytes", 0.0);
  lr.flops_source = r.body.value("flops_source", std::string());
  lr.bytes_source = r.body.value("bytes_source", std::string());
  loaded_key_ = key;
  loaded_ = lr;
  return lr;
}

Expected<LoadResult> RunnerClient::load(const TaskRef& task) {
  const Failure abandoned{FailureKind::judge, "abandoned",
                          "the load of " + task.id + " was abandoned: the run is stopping"};
  {
    std::lock_guard lk(child_mu_);
    if (abandoned_) return abandoned;
    loading_ = true;
  }
  Expected<LoadResult> lr = ensure_loaded(task);
  {
    std::lock_guard lk(child_mu_);
    loading_ = false;
  }
  if (!abandoned_) return lr;
  kill_worker();  // reaps the killed worker now (a load that ended just before the kill too)
  return abandoned;
}

void RunnerClient::abandon_loads() {
  std::lock_guard lk(child_mu_);
  abandoned_ = true;
  if (loading_ && child_) child_->kill_group();
}

std::string load_killed_hint(const TaskRef& task) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  char b[512];
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  const double ram = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
  std::string need = "how much it needs is unknown (its get_inputs() shapes were not understood)";
  if (task.input_bytes_estimate > 0) {
    // The judge holds the inputs several times over (pristine copy, the reference's outputs, the
    // exchange arena), so the estimate is a floor.
    std::snprintf(b, sizeof b, "one set of the task's inputs needs about %.2f GiB by its shapes",
                  task.input_bytes_estimate / gib);
    need = b;
  }
  std::snprintf(b, sizeof b, " (this machine has %.1f GiB of memory)", ram / gib);
  return "killed while loading the task (SIGKILL): it likely ran out of memory; " + need +
         (ram > 0 ? std::string(b) : std::string()) +
         ". Smaller shapes: --profile small or --profile ci (`kforge suites --suite SUITE --profile ci` "
         "lists them)";
}

namespace {
json tolerances_json(const TaskRef& t) {
  json j = json::object();
  for (const auto& [k, v] : t.tolerances) j[k] = {v.first, v.second};
  return j;
}
}  // namespace

namespace {
/// A failure of kforge's machinery (not the candidate's): infra_error, never scored.
template <class R>
void judge_failed(R* r, const Failure& f) {
  r->outcome = Outcome::infra_error;
  r->failure = f.kind;
  r->sub_kind = f.sub_kind;
  r->message = f.message;
}
/// The judge's own deadline for a request: inside the client's, so that a slow candidate is
/// the judge's verdict (timeout), never the client's (infra_error).
int64_t judge_deadline_ms(std::chrono::milliseconds client_timeout) {
  return std::max<int64_t>(2000,
                           client_timeout.count() - std::max<int64_t>(5000, client_timeout.count() / 6));
}
}  // namespace

std::optional<JudgeError> judge_error_from_string(const std::string& s) {
  if (s == "python_exception") return JudgeError::python_exception;
  if (s == "runner") return JudgeError::runner;
  if (s == "protocol") return JudgeError::protocol;
  if (s == "reference_failed") return JudgeError::reference_failed;
  return std::nullopt;
}

Failure judge_failure(JudgeError error, const std::string& text) {
  switch (error) {
    case JudgeError::reference_failed:
      // A reference that ran but cannot judge (its own runs disagree): unjudgeable, not failed.
      return {FailureKind::reference, text.rfind("unjudgeable:", 0) == 0 ? "unjudgeable" : "reference_failed",
              text};
    case JudgeError::python_exception:
      return {FailureKind::judge, "python_exception", text};
    case JudgeError::protocol:
      return {FailureKind::judge, "protocol", text};
    case JudgeError::runner:
      break;
  }
  return {FailureKind::judge, "runner", text};
}

CheckResult RunnerClient::check(const TaskRef& task, const std::filesystem::path& artifact, int trials,
                                int64_t seed, std::optional<HostKind> host) {
  const HostKind h = host.value_or(host_kind_for_artifact(artifact.string()));
  CheckResult c = check_once(task, artifact, trials, seed, h);
  if (c.outcome != Outcome::infra_error || known_unusable(task)) return c;  // judged, or the load's verdict
  // The worker failed (or a test block's reference did): the next request starts a fresh one.
  const bool fresh = last_request_fresh_;
  kill_worker();
  if (reference_unusable(c.failure) && fresh) {
    mark_unusable(task, c.message);
    return c;
  }
  spdlog::info("task {}: infra_error ({}); the check once more on a fresh worker", task.id, c.sub_kind);
  CheckResult again = check_once(task, artifact, trials, seed, h);
  again.retried = true;
  if (again.outcome == Outcome::infra_error && !known_unusable(task)) {
    kill_worker();
    if (reference_unusable(again.failure)) mark_unusable(task, again.message);
  }
  return again;
}

CheckResult RunnerClient::check_once(const TaskRef& task, const std::filesystem::path& artifact, int trials,
                                     int64_t seed, HostKind host) {
  if (auto known = known_unusable(task)) {
    CheckResult c;
    c.trials = trials;
    judge_failed(&c, judge_failure(JudgeError::reference_failed, unusable_detail(task)));
    return c;
  }
  if (task.test_block()) {
    // No model to load: the request carries the implementation and its test block.
    if (candidates_on_worker_ >= cfg_.recycle_after) kill_worker();  // request() starts a fresh one
  } else if (auto loaded = ensure_loaded(task); !loaded) {
    CheckResult c;
    c.trials = trials;
    judge_failed(&c, judge_failure(JudgeError::reference_failed,
                                   "loading task " + task.id + " failed: " + loaded.failure().message));
    return c;
  }
  ++candidates_on_worker_;
  json req{{"cmd", task.test_block() ? "testblock" : "check"},
           {"artifact", std::filesystem::absolute(artifact).string()},
           {"host", to_string(host)},
           {"trials", trials},
           {"seed", seed},
           {"deadline_ms",
            judge_deadline_ms(task.test_block() ? cfg_.testblock_check_timeout : cfg_.check_timeout)},
           {"tolerances", tolerances_json(task)}};
  if (task.test_block()) {
    req["source"] = task.source;
    req["test_source"] = task.test_source;
    req["test_function"] = task.test_function;
    req["entries"] = task.entries;
    req["device"] = cfg_.device;  // no `load` sets the worker's device for a test block
  }
  if (!task.allow_ops.empty()) req["allow_ops"] = join_ops(task.allow_ops);
  return run_check(req, trials,
                   task.test_block() ? cfg_.testblock_reference_timeout + cfg_.testblock_check_timeout
                                     : cfg_.check_timeout);
}

CheckResult RunnerClient::run_check(json req, int trials, std::chrono::milliseconds timeout) {
  CheckResult c;
  c.trials = trials;
  // Untimed work on the device, never inside another runner's timed work; waited for before
  // the request's timeout starts.
  const TimedHold shared = hold_timed("check", TimedLock::Mode::shared);
  req["timed_lock_shared"] = shared.held();
  auto t0 = Clock::now();
  const long long begin_ns = monotonic_ns();
  Reply r = request(req, timeout);
  c.check_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  log_interval("check", lock_name_.empty() ? cfg_.device : lock_name_, child_ ? child_->pid() : -1, begin_ns,
               monotonic_ns());
  if (r.kind != Reply::ok) {
    c.worker_replaced = r.kind != Reply::failed_to_start;
    judge_failed(&c, Failure{FailureKind::judge, reply_kind_name(r), r.message});
    return c;
  }
  const json& b = r.body;
  if (!b.value("ok", false)) {
    judge_failed(&c, reply_failure(b));
    return c;
  }
  c.outcome = outcome_of(b);
  c.sub_kind = b.value("sub_kind", std::string());
  c.message = b.value("message", std::string());
  c.trials_passed = b.value("trials_passed", 0);
  c.max_abs_err = number(b, "max_abs_err");
  c.max_rel_err = number(b, "max_rel_err");
  c.tolerance_ratio = number(b, "tolerance_ratio");
  c.mismatch_fraction = number(b, "mismatch_fraction");
  c.phases_ms = phases_of(b);
  if (shared.held()) c.phases_ms["device_lock_wait_ms"] = shared.waited_ms();
  if (auto it = b.find("correct"); it != b.end() && it->is_boolean()) c.correct = it->get<bool>();
  c.correct_message = b.value("correct_message", std::string());
  if (auto it = b.find("trial"); it != b.end() && it->is_object()) {
    c.trial.index = it->value("index", 0);
    c.trial.of = it->value("of", 0);
    c.trial.kind = it->value("kind", std::string());
    c.trial.seed = it->value("seed", int64_t{0});
    c.trial.input_scale = number(*it, "input_scale");
  }
  if (auto it = b.find("checks"); it != b.end() && it->is_array())
    for (const auto& line : *it)
      if (line.is_string()) c.checks.push_back(line.get<std::string>());
  return c;
}

BenchResult RunnerClient::bench(const TaskRef& task, const std::filesystem::path& artifact,
                                const BenchOptions& o, std::optional<HostKind> host) {
  const HostKind h = host.value_or(host_kind_for_artifact(artifact.string()));
  BenchResult b = bench_once(task, artifact, o, h);
  if (b.ok || b.outcome != Outcome::infra_error || known_unusable(task)) return b;
  kill_worker();  // as check(): a fresh worker next, and once more on it
  spdlog::info("task {}: infra_error while timing ({}); once more on a fresh worker", task.id, b.sub_kind);
  BenchResult again = bench_once(task, artifact, o, h);
  again.retried = true;
  if (!again.ok && again.outcome == Outcome::infra_error) kill_worker();
  return again;
}

BenchResult RunnerClient::bench_once(const TaskRef& task, const std::filesystem::path& artifact,
                                     const BenchOptions& o, HostKind host) {
  BenchResult b;
  if (auto loaded = ensure_loaded(task); !loaded) {
    judge_failed(&b, judge_failure(JudgeError::reference_failed,
                                   "loading task " + task.id + " failed: " + loaded.failure().message));
    return b;
  }
  json req{{"cmd", "bench"},
           {"reps", o.reps},
           {"min_reps", o.min_reps},
           {"warmup", o.warmup},
           {"budget_ms", o.budget_ms},
           {"seed", o.seed},
           {"deadline_ms", judge_deadline_ms(cfg_.bench_timeout)},
           {"baseline", o.compile_baseline ? "compile" : "eager"},
           {"tolerances", tolerances_json(task)}};  // the verified batches' tolerance is the check's
  if (!artifact.empty()) {
    req["artifact"] = std::filesystem::absolute(artifact).string();
    req["host"] = to_string(host);
  }
  if (!task.allow_ops.empty()) req["allow_ops"] = join_ops(task.allow_ops);
  if (o.peak_bytes_per_s > 0) req["peak_bytes_per_s"] = o.peak_bytes_per_s;
  if (!o.reference_before) req["reference_before"] = false;
  // Timed work: under the device's lock, waited for before the request's timeout starts.
  const TimedHold held = hold_timed("bench");
  req["timed_lock_held"] = held.held();
  Reply r = request(req, cfg_.bench_timeout);
  b.phases_ms["device_lock_wait_ms"] = held.waited_ms();
  if (r.kind != Reply::ok) {
    judge_failed(&b, Failure{FailureKind::judge, reply_kind_name(r), r.message});
    return b;
  }
  const json& j = r.body;
  if (!j.value("ok", false)) {
    judge_failed(&b, reply_failure(j));
    return b;
  }
  if (j.contains("outcome")) {  // the candidate failed while being timed
    b.outcome = outcome_of(j);
    b.sub_kind = j.value("sub_kind", std::string());
    b.message = j.value("message", std::string());
    return b;
  }
  b.ok = true;
  b.outcome = Outcome::pass;
  if (j.contains("candidate")) b.candidate = stats_of(j["candidate"]);
  b.reference = stats_of(j["reference"]);
  auto samples = [&](const char* which, std::vector<double>* out) {
    if (auto it = j.find(which); it != j.end() && it->contains("samples_ms"))
      for (const auto& v : (*it)["samples_ms"])
        if (v.is_number()) out->push_back(v.get<double>());
  };
  samples("candidate", &b.candidate_samples);
  samples("reference", &b.reference_samples);
  if (j.contains("reference_compile")) b.reference_compile = stats_of(j["reference_compile"]);
  b.candidate_ms = j.value("candidate_ms", 0.0);
  b.reference_ms = j.value("reference_ms", 0.0);
  b.speedup = j.value("speedup", 0.0);
  if (j.contains("speedup_ci") && j["speedup_ci"].size() == 2) {
    b.speedup_ci_low = j["speedup_ci"][0].get<double>();
    b.speedup_ci_high = j["speedup_ci"][1].get<double>();
  }
  b.sets = j.value("sets", 0);
  b.sets_per_window = j.value("sets_per_window", 0);
  b.round_trip_ms = j.value("round_trip_ms", 0.0);
  b.lead_in_ms = j.value("lead_in_ms", 0.0);
  b.gpu_base_ms = j.value("gpu_base_ms", 0.0);
  b.lead_in_length_ms = j.value("lead_in_length_ms", 0.0);
  b.lead_in_preempted = j.value("lead_in_preempted", 0);
  b.lead_in_max_gap_us = j.value("lead_in_max_gap_us", 0.0);
  if (j.contains("judge_side") && j["judge_side"].is_object())
    for (const auto& [k, v] : j["judge_side"].items())
      if (v.is_number()) b.judge_side[k] = v.get<double>();
  if (j.contains("host_reported") && j["host_reported"].is_object())
    for (const auto& [k, v] : j["host_reported"].items())
      if (v.is_number()) b.host_reported_ms[k] = v.get<double>();
  for (const auto& [k, v] : phases_of(j)) b.phases_ms[k] = v;
  b.speed_of_light_ms = number(j, "speed_of_light_ms");
  b.peak_bytes_per_s = number(j, "peak_bytes_per_s");
  b.launch_floor_ms = number(j, "launch_floor_ms");
  b.timing_anomaly = j.value("timing_anomaly", std::string());
  b.timing_anomaly_kind = j.value("timing_anomaly_kind", std::string());
  b.timing_unstable = j.value("timing_unstable", std::string());
  b.reference_before_ms = number(j, "reference_before_ms");
  b.flags = j.value("flags", std::vector<std::string>{});
  if (!held.held()) b.flags.push_back("not serialised with other timed work on the device: " + held.why());
  b.bench_ms = j.value("bench_ms", 0.0) + held.waited_ms();
  return b;
}

Expected<double> RunnerClient::triton_do_bench(const TaskRef& task, int64_t seed) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  const TimedHold held = hold_timed("triton_bench");
  Reply r = request(json{{"cmd", "triton_bench"}, {"seed", seed}, {"timed_lock_held", held.held()}},
                    cfg_.bench_timeout);
  if (r.kind != Reply::ok) return Failure{FailureKind::judge, reply_kind_name(r), r.message};
  if (!r.body.value("ok", false)) return reply_failure(r.body);
  if (!r.body.contains("ms") || !r.body["ms"].is_number())
    return Failure{FailureKind::judge, "judge_protocol", "the triton_bench reply has no number \"ms\""};
  return r.body["ms"].get<double>();
}

Expected<std::vector<double>> RunnerClient::reference_only(const TaskRef& task, int trials, int64_t seed) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  const TimedHold shared = hold_timed("reference", TimedLock::Mode::shared);
  Reply r = request(
      json{{"cmd", "reference"}, {"trials", trials}, {"seed", seed}, {"timed_lock_shared", shared.held()}},
      cfg_.check_timeout);
  if (r.kind != Reply::ok) return Failure{FailureKind::judge, reply_kind_name(r), r.message};
  if (!r.body.value("ok", false)) return reply_failure(r.body);
  std::vector<double> ms;
  if (auto it = r.body.find("ms"); it != r.body.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) ms.push_back(v.get<double>());
  return ms;
}

}  // namespace kforge::backends
