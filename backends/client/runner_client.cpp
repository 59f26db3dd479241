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

#include "kforge/backends/python_traceback.hpp"
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
namespace protocol = kforge::backends::protocol;
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
    child_->write_line(dump_json(protocol::encode(protocol::Request(protocol::QuitRequest{}))));
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
  if (!line || !protocol::is_ready_line(j)) {
    *error = "kforge-runner did not start: " + (line ? *line : std::string("no ready line")) + "\n" +
             child_->stderr_tail();
    kill_worker();
    return false;
  }
  spdlog::debug("runner {} started (pid {}) for {}", cfg_.runner.string(), child_->pid(), cfg_.device);
  return true;
}

RunnerClient::Reply RunnerClient::request(protocol::Request req, std::chrono::milliseconds timeout) {
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
  req.id = id;
  // Whether this is the worker's first request about a task: a reference that fails then
  // failed on its own, not because an earlier task left the worker broken.
  using protocol::Command;
  const Command cmd = req.command();
  if (cmd != Command::hello && cmd != Command::peaks && cmd != Command::prewarm)
    last_request_fresh_ = task_requests_on_worker_++ == 0;
  auto t0 = Clock::now();
  if (child_->write_line(dump_json(protocol::encode(req)))) {  // a suite file may hold any bytes
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
/// A load that failed (LoadResult): the reference's fault, whatever the worker said.
Failure load_failure(const std::string& error) {
  return {FailureKind::reference, "reference_failed", error};
}
/// A load the judge answered with an error: the reference's fault, unjudgeable as it said.
Failure load_failure(const protocol::ErrorReply& e) {
  if (e.error == JudgeError::unjudgeable) return judge_failure(e.error, e.message);
  return load_failure(std::string(to_string(e.error)) + ": " + e.message);
}
}  // namespace

template <class R>
Expected<R> RunnerClient::ask(protocol::Request req, std::chrono::milliseconds timeout) {
  Reply r = request(std::move(req), timeout);
  if (r.kind != Reply::ok) return Failure{FailureKind::judge, reply_kind_name(r), r.message};
  return protocol::decode_reply<R>(r.body);
}

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

Expected<protocol::HelloReply> RunnerClient::hello_reply() {
  return ask<protocol::HelloReply>(protocol::HelloRequest{}, cfg_.start_timeout);
}

Expected<std::string> RunnerClient::hello() {
  Expected<protocol::HelloReply> h = hello_reply();
  if (!h) return h.failure();
  return protocol::encode(h.value()).dump();
}

bool RunnerClient::prewarm(HostKind host) {
  protocol::PrewarmRequest q;
  q.host = host;
  q.device = cfg_.device;
  return ask<protocol::PrewarmReply>(q, cfg_.start_timeout).ok();
}

std::string RunnerClient::timed_lock_name() {
  if (!lock_name_.empty()) return lock_name_;
  if (cfg_.device.rfind("cuda:", 0) != 0) return lock_name_ = backends::timed_lock_name(cfg_.device);
  const int index = std::atoi(cfg_.device.c_str() + 5);
  if (const Expected<protocol::HelloReply> h = hello_reply())
    for (const auto& d : h->devices)
      if (d.index == index && !d.timed_lock.empty()) return lock_name_ = d.timed_lock;
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
  protocol::Request req(protocol::PeaksRequest{cfg_.device});
  req.timed_lock_held = held.held();
  Expected<MeasuredPeaks> p = ask<MeasuredPeaks>(std::move(req), cfg_.load_timeout);
  if (!p) return std::nullopt;
  return p.value();
}

Expected<ProfileTargets> RunnerClient::profile_targets(const TaskRef& task, const fs::path& artifact,
                                                       const fs::path& dir, int64_t seed, HostKind host) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  std::error_code ec;
  fs::create_directories(dir, ec);
  protocol::ProfileSetupRequest q;
  q.candidate.artifact = fs::absolute(artifact).string();
  q.candidate.host = host;
  q.dir = fs::absolute(dir).string();
  q.seed = seed;
  // Untimed work on the device (the inputs made there and copied out): a shared hold, or the
  // profile step's own exclusive one when it already holds it.
  const TimedHold shared = hold_timed("profile setup", TimedLock::Mode::shared);
  protocol::Request req(std::move(q));
  req.timed_lock_shared = shared.held();
  return ask<ProfileTargets>(std::move(req), cfg_.load_timeout);
}

std::string RunnerClient::unusable_detail(const TaskRef& task) const {
  auto it = unusable_detail_.find(task.cache_key());
  return it == unusable_detail_.end() ? "" : it->second.message;
}

std::optional<Failure> RunnerClient::unusable_failure(const TaskRef& task, const std::string& message) const {
  auto it = unusable_detail_.find(task.cache_key());
  if (it == unusable_detail_.end()) return std::nullopt;
  return Failure{it->second.kind, it->second.sub_kind, message};
}

void RunnerClient::mark_unusable(const TaskRef& task, const Failure& failure) {
  unusable_detail_[task.cache_key()] = failure;
  const std::string& detail = failure.message;
  unusable_by_id_[task.id] = failure_headline(detail);
}

std::optional<std::string> RunnerClient::known_unusable(const TaskRef& task) const {
  auto it = unusable_detail_.find(task.cache_key());
  if (it == unusable_detail_.end()) return std::nullopt;
  return "loading task " + task.id + " failed: " + it->second.message;
}

Expected<LoadResult> RunnerClient::ensure_loaded(const TaskRef& task) {
  if (auto f = unusable_failure(task, unusable_detail(task))) return *f;  // costs nothing now
  for (int attempt = 0;; ++attempt) {
    Expected<LoadResult> lr = load_once(task);
    if (lr || (loading_ && abandoned_)) return lr;  // abandoned: neither retried nor the task's fault
    // The reference failed: it may have left the interpreter or the device unusable, so the
    // next request starts a fresh worker. On a worker that had served other tasks the failure
    // may be theirs: once more on a fresh one before the task is unusable.
    const bool fresh = last_request_fresh_;
    kill_worker();
    if (lr.failure().kind != FailureKind::reference) return lr;  // kforge's (judge_protocol), not the task's
    if (fresh || attempt > 0) {
      mark_unusable(task, lr.failure());
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
  protocol::LoadRequest q;
  q.task = task.id;
  q.file = task.file.string();
  q.source = source;
  q.device = cfg_.device;
  q.flops = task.flops_expr;
  q.bytes = task.bytes_expr;
  q.module_mode = task.module_mode;
  const TimedHold shared = hold_for_load();  // the reference runs on the device
  if (loading_ && abandoned_) return Failure{FailureKind::cancelled, "abandoned", "abandoned while waiting"};
  protocol::Request req(std::move(q));
  req.timed_lock_shared = shared.held();
  Reply r = request(std::move(req), cfg_.load_timeout);
  // A failed load leaves the worker without a current task (it drops it before loading):
  // forget the key, so the next request for any task loads it again.
  loaded_key_.clear();
  if (r.kind != Reply::ok) {
    std::string error = r.message;
    if (r.kind == Reply::died && r.term_signal == SIGKILL) error += "\n" + load_killed_hint(task);
    return load_failure(error);
  }
  if (auto e = protocol::error_reply(r.body)) return load_failure(*e);
  Expected<LoadResult> lr = protocol::decode_reply<LoadResult>(r.body);
  if (!lr) return lr;  // a reply that does not fit: judge_protocol, kforge's own failure
  loaded_key_ = key;
  loaded_ = lr.value();
  return lr;
}

Expected<LoadResult> RunnerClient::load(const TaskRef& task) {
  const Failure abandoned{FailureKind::cancelled, "abandoned",
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

CheckResult RunnerClient::check(const TaskRef& task, const std::filesystem::path& artifact, int trials,
                                int64_t seed, HostKind h) {
  CheckResult c = check_once(task, artifact, trials, seed, h);
  if (c.outcome != Outcome::infra_error || known_unusable(task)) return c;  // judged, or the load's verdict
  // The worker failed (or a test block's reference did): the next request starts a fresh one.
  const bool fresh = last_request_fresh_;
  kill_worker();
  if (reference_unusable(c.failure) && fresh) {
    mark_unusable(task, Failure{*c.failure, c.sub_kind, c.message});
    return c;
  }
  spdlog::info("task {}: infra_error ({}); the check once more on a fresh worker", task.id, c.sub_kind);
  CheckResult again = check_once(task, artifact, trials, seed, h);
  again.retried = true;
  if (again.outcome == Outcome::infra_error && !known_unusable(task)) {
    kill_worker();
    if (reference_unusable(again.failure))
      mark_unusable(task, Failure{*again.failure, again.sub_kind, again.message});
  }
  return again;
}

CheckResult RunnerClient::check_once(const TaskRef& task, const std::filesystem::path& artifact, int trials,
                                     int64_t seed, HostKind host) {
  if (auto known = known_unusable(task)) {
    CheckResult c;
    c.trials = trials;
    judge_failed(&c, *unusable_failure(task, unusable_detail(task)));
    return c;
  }
  if (task.test_block()) {
    // No model to load: the request carries the implementation and its test block.
    if (candidates_on_worker_ >= cfg_.recycle_after) kill_worker();  // request() starts a fresh one
  } else if (auto loaded = ensure_loaded(task); !loaded) {
    CheckResult c;
    c.trials = trials;
    Failure f = loaded.failure();  // the reference's (failed or unjudgeable), or the judge's
    f.message = "loading task " + task.id + " failed: " + f.message;
    judge_failed(&c, f);
    return c;
  }
  ++candidates_on_worker_;
  const protocol::Candidate candidate{fs::absolute(artifact).string(), host, join_ops(task.allow_ops)};
  if (task.test_block()) {
    // No model to load: the request carries the implementation and its test block.
    protocol::TestblockRequest q;
    q.candidate = candidate;
    q.trials = trials;
    q.seed = seed;
    q.deadline_ms = judge_deadline_ms(cfg_.testblock_check_timeout);
    // The reference's whole allowance: the candidate's own deadline keeps the client's margin.
    q.reference_deadline_ms = cfg_.testblock_reference_timeout.count();
    q.tolerances = task.tolerances;
    q.source = task.source;
    q.test_source = task.test_source;
    q.test_function = task.test_function;
    q.entries = task.entries;
    q.device = cfg_.device;  // no `load` sets the worker's device for a test block
    return run_check(std::move(q), trials, cfg_.testblock_reference_timeout + cfg_.testblock_check_timeout);
  }
  protocol::CheckRequest q;
  q.candidate = candidate;
  q.trials = trials;
  q.seed = seed;
  q.deadline_ms = judge_deadline_ms(cfg_.check_timeout);
  q.tolerances = task.tolerances;
  return run_check(std::move(q), trials, cfg_.check_timeout);
}

CheckResult RunnerClient::run_check(protocol::Request req, int trials, std::chrono::milliseconds timeout) {
  CheckResult c;
  c.trials = trials;
  // Untimed work on the device, never inside another runner's timed work; waited for before
  // the request's timeout starts.
  const TimedHold shared = hold_timed("check", TimedLock::Mode::shared);
  req.timed_lock_shared = shared.held();
  auto t0 = Clock::now();
  const long long begin_ns = monotonic_ns();
  Reply r = request(std::move(req), timeout);
  const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  c.check_ms = wall_ms;
  log_interval("check", lock_name_.empty() ? cfg_.device : lock_name_, child_ ? child_->pid() : -1, begin_ns,
               monotonic_ns());
  if (r.kind != Reply::ok) {
    c.worker_replaced = r.kind != Reply::failed_to_start;
    judge_failed(&c, Failure{FailureKind::judge, reply_kind_name(r), r.message});
    return c;
  }
  Expected<protocol::CheckReply> reply = protocol::decode_reply<protocol::CheckReply>(r.body);
  if (!reply) {
    judge_failed(&c, reply.failure());
    return c;
  }
  static_cast<protocol::CheckReply&>(c) = std::move(reply.value());
  c.trials = trials;
  c.check_ms = wall_ms;  // the client's wall time, the wait for the worker included
  if (shared.held()) c.phases_ms["device_lock_wait_ms"] = shared.waited_ms();
  return c;
}

BenchResult RunnerClient::bench(const TaskRef& task, const std::filesystem::path& artifact,
                                const BenchOptions& o, HostKind h) {
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
    Failure f = loaded.failure();
    f.message = "loading task " + task.id + " failed: " + f.message;
    judge_failed(&b, f);
    return b;
  }
  protocol::BenchRequest q;
  q.reps = o.reps;
  q.min_reps = o.min_reps;
  q.warmup = o.warmup;
  q.budget_ms = o.budget_ms;
  q.seed = o.seed;
  q.deadline_ms = judge_deadline_ms(cfg_.bench_timeout);
  q.compile_baseline = o.compile_baseline;
  q.tolerances = task.tolerances;  // the verified batches' tolerance is the check's
  if (!artifact.empty())
    q.candidate = protocol::Candidate{fs::absolute(artifact).string(), host, join_ops(task.allow_ops)};
  if (o.peak_bytes_per_s > 0) q.peak_bytes_per_s = o.peak_bytes_per_s;
  q.reference_before = o.reference_before;
  // Timed work: under the device's lock, waited for before the request's timeout starts.
  const TimedHold held = hold_timed("bench");
  protocol::Request req(std::move(q));
  req.timed_lock_held = held.held();
  Reply r = request(std::move(req), cfg_.bench_timeout);
  b.phases_ms["device_lock_wait_ms"] = held.waited_ms();
  if (r.kind != Reply::ok) {
    judge_failed(&b, Failure{FailureKind::judge, reply_kind_name(r), r.message});
    return b;
  }
  Expected<protocol::BenchReply> reply = protocol::decode_reply<protocol::BenchReply>(r.body);
  if (!reply) {
    judge_failed(&b, reply.failure());
    return b;
  }
  static_cast<protocol::BenchReply&>(b) = std::move(reply.value());
  b.phases_ms["device_lock_wait_ms"] = held.waited_ms();
  if (b.outcome != Outcome::pass) return b;  // the candidate failed while being timed
  b.ok = true;
  if (!held.held()) b.flags.push_back("not serialised with other timed work on the device: " + held.why());
  b.bench_ms += held.waited_ms();
  return b;
}

Expected<double> RunnerClient::triton_do_bench(const TaskRef& task, int64_t seed) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  const TimedHold held = hold_timed("triton_bench");
  protocol::Request req(protocol::TritonBenchRequest{seed});
  req.timed_lock_held = held.held();
  Expected<protocol::TritonBenchReply> r =
      ask<protocol::TritonBenchReply>(std::move(req), cfg_.bench_timeout);
  if (!r) return r.failure();
  return r->ms;
}

Expected<std::vector<double>> RunnerClient::reference_only(const TaskRef& task, int trials, int64_t seed) {
  if (auto loaded = ensure_loaded(task); !loaded) return loaded.failure();
  const TimedHold shared = hold_timed("reference", TimedLock::Mode::shared);
  protocol::Request req(protocol::ReferenceRequest{trials, seed});
  req.timed_lock_shared = shared.held();
  Expected<protocol::ReferenceReply> r = ask<protocol::ReferenceReply>(std::move(req), cfg_.check_timeout);
  if (!r) return r.failure();
  return r->ms;
}

}  // namespace kforge::backends
