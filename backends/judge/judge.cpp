// The candidate's session (judge.hpp): the host's command line, starting, calibrating and
// loading it (open_session), running the candidate on sets of the exchange (run_sets) and
// reading its replies; the judge's scratch directories and the Triton host's prewarm. Shared by
// the check (check.cpp), the bench (bench.cpp) and the test block (testblock.cpp).
#include <ftw.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "judge_internal.hpp"

namespace kforge::runner {

json failure(const std::string& outcome, const std::string& sub_kind, const std::string& message) {
  return {{"ok", true}, {"outcome", outcome}, {"sub_kind", sub_kind}, {"message", message}};
}
json failure(const HostFailure& f) {
  return failure(f.outcome, f.sub_kind, f.message);
}

namespace {

/// CUDA error names (as the host reports them) to runtime_error sub-kinds.
std::string cuda_sub_kind(const std::string& name) {
  if (name == "cudaErrorIllegalAddress") return "illegal_memory_access";
  if (name == "cudaErrorMisalignedAddress") return "misaligned_address";
  if (name == "cudaErrorInvalidConfiguration" || name == "cudaErrorLaunchOutOfResources" ||
      name == "cudaErrorInvalidValue")
    return "invalid_launch";
  if (name == "cudaErrorMemoryAllocation") return "out_of_memory";
  return "cuda_error";
}

}  // namespace

/// The Triton host's free text on a reply line: a JSON string (its tracebacks have newlines),
/// else the text as it came.
std::string host_text(const std::string& rest) {
  try {
    auto j = json::parse(rest);
    if (j.is_string()) return j.get<std::string>();
  } catch (const std::exception&) {
  }
  return rest;
}

namespace {

bool python_host(const protocol::Candidate& c) {
  return c.host == kforge::backends::HostKind::python;
}

/// An empty directory of the judge's, read-only, for the host to run in: the caller's working
/// directory (the kernels folder, the run directory) is not the candidate's to look at.
std::string empty_workdir(ScratchDir* workdir) {
  std::string tmpl = host_temp_dir() + "/kforge-host-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    throw std::runtime_error("cannot create the candidate host's working directory");
  ::chmod(tmpl.c_str(), 0555);
  workdir->path = tmpl;
  return tmpl;
}

/// The candidate loader for the artifact's kind: kforge-host dlopens a shared object; the
/// Triton host (backends/triton/host.py) imports a Python module, on a GPU with a fresh
/// scratch directory for Triton's cache (the only place it may create files). Either runs in
/// an empty directory of its own.
HostCommand host_command(const JudgeContext& ctx, Session& s) {
  ScratchDir* scratch = &s.scratch;
  if (s.host_kind == kforge::backends::HostKind::native)
    return HostCommand{{ctx.host_exe}, {}, {}, empty_workdir(&s.workdir)};
  if (ctx.python.empty() || ctx.triton_host.empty())
    throw std::runtime_error("this kforge-runner has no Triton candidate host (python / host.py not set)");
  HostCommand c{{ctx.python, "-I", "-B", ctx.triton_host},
                {ctx.pyconfine_lib},
                {"PYTHONDONTWRITEBYTECODE=1",
                 // getpass.getuser() (torch's inductor config, on import) reads these before it
                 // asks NSS, whose nscd socket the filter stops
                 "USER=kforge-candidate", "LOGNAME=kforge-candidate"},
                empty_workdir(&s.workdir),
                /*keyed=*/true,
                ctx.zygotes};
  if (!ctx.device.is_cuda()) {
    c.env.push_back("TRITON_INTERPRET=1");  // Triton's interpreter runs the kernels on the CPU
    // No GPU in sight, as on a machine without one: the interpreter's host on a GPU machine
    // (--device cpu there) then starts as it does on the CPU machine (issue 41 §4).
    c.env.push_back("CUDA_VISIBLE_DEVICES=");
    return c;
  }
  std::string tmpl = host_temp_dir() + "/kforge-triton-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create the Triton host's scratch directory");
  scratch->path = tmpl;
  c.env.push_back("KFORGE_TRITON_SCRATCH=" + tmpl);
  if (!ctx.triton_cache.empty()) c.env.push_back("TRITON_CACHE_DIR=" + ctx.triton_cache);
  return c;
}

}  // namespace

/// The Triton host's `allow` line for the request's allowed ops (none for kforge-host).
std::vector<std::string> allow_lines(const protocol::Candidate& c) {
  if (c.allow_ops.empty() || !python_host(c)) return {};
  return {"allow " + c.allow_ops};
}

namespace {

/// The Triton host's `model` line: what it needs to build a KernelBench `ModelNew` candidate
/// (get_init_inputs(), the state's names in the exchange's order, the module mode); the host
/// uses it only when the module defines ModelNew and no kf_forward.
std::vector<std::string> model_lines(LoadedTask& task, const protocol::Candidate& c) {
  if (!python_host(c)) return {};
  const json m = model_spec(task);
  return {"model " + m.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

/// The lines the host gets before `load`: allowed ops, and the model's description.
std::vector<std::string> before_load(LoadedTask& task, const protocol::Candidate& c) {
  auto lines = allow_lines(c);
  for (auto& l : model_lines(task, c)) lines.push_back(std::move(l));
  return lines;
}

namespace {

/// How long a check waits for the device's timed lock before calibrating without it (its host
/// is then not reused by the bench, which calibrates a fresh one under the lock).
constexpr std::chrono::milliseconds kCalibrationLockWait{250};

/// How many threads an OpenMP kernel's pool adds to the host (where the artifact brought
/// libgomp): OMP_NUM_THREADS where kforge's environment sets it (the host inherits it), else
/// every CPU of the affinity mask (libgomp's default), less the calling thread.
int openmp_pool_threads() {
  if (const char* v = std::getenv("OMP_NUM_THREADS"); v && std::atoi(v) > 0) return std::atoi(v) - 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return std::max(0, CPU_COUNT(&set) - 1);
}

}  // namespace

/// A cpu candidate may leave no thread of its own after a call but OpenMP's pool: extra threads
/// fail the attempt (forbidden_api/threads). They could not run unseen anyway (the host is
/// frozen whenever the judge is not timing or checking it), but work they hold is not the call's.
std::optional<json> check_threads(const JudgeContext& ctx, Session& s) {
  if (ctx.device.is_cuda() || s.host_kind != kforge::backends::HostKind::native || s.threads_allowed < 0)
    return std::nullopt;
  const int n = s.host->thread_count();
  if (n < 0 || n <= s.threads_allowed) return std::nullopt;
  return failure(
      "forbidden_api", "threads",
      "the candidate left " + std::to_string(n) + " threads in its process after kf_forward returned (" +
          std::to_string(s.threads_allowed) +
          " allowed: the host's own and OpenMP's pool); kernels may not keep threads of their own");
}

/// Starts the host, describes the exchange, measures the channel's round trip (nothing of the
/// candidate is loaded yet, so it cannot inflate it) and loads the artifact. A reply in *out
/// when the candidate failed to load; throws on the judge's own failures.
std::optional<json> open_session(const JudgeContext& ctx, const protocol::Candidate& c, Session& s,
                                 const Deadline& dl, Laps& laps,
                                 const std::vector<std::string>& before_load) {
  std::string err;
  const std::string& artifact = c.artifact;
  s.artifact = artifact;
  s.host_kind = c.host;
  s.host =
      CandidateHost::start(host_command(ctx, s), artifact, ctx.device.is_cuda() ? ctx.device.index() : -1,
                           s.ex->host_fds(), &err, dl.end);
  if (!s.host) throw std::runtime_error(err);
  laps.lap(s.host->forked() ? "host_fork_ms" : "host_start_ms");  // warm from the zygote, or spawned
  HostFailure f;
  std::string bad;
  if (!s.host->pipeline(s.ex->host_lines(4), dl.left(), &bad, &f))
    throw std::runtime_error("kforge-host failed during set-up: " + f.message);
  if (!bad.empty()) throw std::runtime_error("kforge-host set-up: " + bad);
  laps.lap("host_setup_ms");
  if (ctx.timed_lock_shared) {
    s.calibrated_alone = false;  // not calibrated: a bench opens its own host (judge.hpp)
  } else {
    // Timed work: under the device's lock, unless the client holds it for this whole request.
    kforge::backends::TimedHold hold;
    if (ctx.timed_lock && !ctx.timed_lock_held) {
      hold = ctx.timed_lock->acquire(ctx.timed_lock_name, "calibrate", kCalibrationLockWait);
      laps.lap("device_lock_wait_ms");
    }
    calibrate(ctx, s, dl);
    s.calibrated_alone = ctx.timed_lock_held || !ctx.timed_lock || hold.held() ||
                         hold.state() == kforge::backends::TimedHold::State::unavailable;
    laps.lap("calibrate_ms");
  }
  for (const auto& line : before_load) {  // the Triton host's `allow` and `testsrc`
    auto a = s.host->request(line, dl.left(), &f);
    if (!a || *a != "ok")
      throw std::runtime_error("the Triton host refused '" + line.substr(0, 40) +
                               "': " + a.value_or(f.message));
  }
  auto r = s.host->request("load", dl.left(), &f);
  laps.lap("host_load_ms");
  if (!r) return failure(f);
  if (*r == "ok") {
    if (!ctx.device.is_cuda() && s.host_kind == kforge::backends::HostKind::native)
      if (int n = s.host->thread_count(); n > 0)
        s.threads_allowed = n + (s.host->maps_file("libgomp") ? openmp_pool_threads() : 0);
    return std::nullopt;
  }
  if (r->rfind("err entry_point", 0) == 0) return failure("format_error", "entry_point", r->substr(16));
  if (r->rfind("err load", 0) == 0) return failure("runtime_error", "load", host_text(r->substr(9)));
  // `err infra` (the artifact's descriptor would not open or map) and `err confine`: before any
  // of the candidate's code ran, so the judge's failure (infra_error), never the candidate's.
  throw std::runtime_error("the candidate host failed before the candidate's code ran: " + *r);
}

namespace {

/// "<cmd> <seq> <set> <set> ...": a request over input/output sets.
std::string sets_line(const std::string& cmd, const std::string& seq, const std::vector<int>& sets) {
  std::string line = cmd + " " + seq;
  for (int k : sets) line += " " + std::to_string(k);
  return line;
}

}  // namespace

/// The Triton host's `err <kind> <text>` after it ran the candidate (`store`, `testblock`): the
/// outcome the kind means. `where`, when not empty, prefixes the messages about the results.
json host_error(const std::string& kind, const std::string& text, const std::string& where) {
  if (kind == "python") return failure("runtime_error", "python_exception", text);
  if (kind == "torch_fallback")
    return failure("torch_fallback", "",
                   "the candidate ran PyTorch compute instead of Triton kernels: " + text);
  const std::string msg = where.empty() ? text : where + ": " + text;
  if (kind == "alias") return failure("output_mismatch", "aliases_input", msg);
  if (kind == "dtype") return failure("output_mismatch", "dtype", msg);
  return failure("output_mismatch", "shape", msg);  // count, type, shape, device
}

/// Calls the candidate on the given sets, back to back; nullopt when every call returned 0
/// and the device reported no error. The host is frozen the moment its "done" is read
/// (CandidateHost::request): nothing of the candidate runs between its reply and the judge's
/// reads. The Triton host copies what kf_forward returned into the sets' outputs inside the
/// call, before its "done" (so inside the judge's clock); a return value of the wrong count,
/// type, dtype, shape or device, or one sharing memory with an input, is the candidate's
/// output_mismatch (`done <seq> 2 store <kind> <text>`). It may also answer with a Python
/// exception (runtime_error/python_exception: the agent's side classifies the traceback) or
/// with the PyTorch compute ops its recording saw (torch_fallback).
/// *reported, when given, receives what the host said of its own time (a JSON object after a
/// successful run; the candidate's side's word, for diagnostics only).
std::optional<json> run_sets(Session& s, const std::vector<int>& sets, const Deadline& dl, json* reported) {
  const std::string seq = std::to_string(++s.seq);
  HostFailure f;
  auto r = s.host->request(sets_line("run", seq, sets), dl.left(), &f, "done " + seq + " ", true);
  if (!r) return failure(f);
  std::istringstream in(*r);
  std::string done, sq, error;
  int rc = 0;
  in >> done >> sq >> rc >> error;
  std::string rest;
  std::getline(in >> std::ws, rest);
  if (error == "python") return failure("runtime_error", "python_exception", host_text(rest));
  if (error == "torch_fallback")
    return failure("torch_fallback", "",
                   "kf_forward ran PyTorch compute instead of Triton kernels: " + host_text(rest) +
                       " (allocation, views and copies are allowed)");
  if (error == "store") {
    std::istringstream e(rest);
    std::string kind;
    e >> kind;
    std::getline(e >> std::ws, rest);
    return host_error(kind, host_text(rest), "");
  }
  if (!error.empty() && error != "-")
    return failure("runtime_error", cuda_sub_kind(error), error + " after the candidate's kernel");
  if (rc != 0) return failure("runtime_error", "nonzero_return", "kf_forward returned " + std::to_string(rc));
  if (reported && !rest.empty()) *reported = json::parse(rest, nullptr, false);
  return std::nullopt;
}

std::string testblock_path(const JudgeContext& ctx) {
  return ctx.triton_host.substr(0, ctx.triton_host.rfind('/') + 1) + "testblock.py";
}

ScratchDir::~ScratchDir() {
  if (path.empty()) return;
  ::nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return (void)::remove(p), 0; },
      16, FTW_DEPTH | FTW_PHYS);
}

namespace {
/// Whether every directory from / down to `dir` can be searched by any user (S_IXOTH): the
/// candidate host runs as another user than the judge where the judge is root.
bool searchable_by_all(const std::string& dir) {
  std::string prefix;
  std::size_t from = 0;
  while (true) {
    const std::size_t slash = dir.find('/', from + 1);
    prefix = dir.substr(0, slash);
    struct stat st {};
    if (prefix.empty() || ::stat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !(st.st_mode & S_IXOTH))
      return false;
    if (slash == std::string::npos) return true;
    from = slash;
  }
}
}  // namespace

std::string host_temp_dir() {
  const char* t = std::getenv("TMPDIR");
  if (t && *t == '/' && searchable_by_all(t)) return t;
  return "/tmp";
}

protocol::PrewarmReply prewarm_host(const JudgeContext& ctx, kforge::backends::HostKind kind) {
  if (kind != kforge::backends::HostKind::python || !ctx.zygotes || ctx.python.empty() ||
      ctx.triton_host.empty())
    return {false};
  CandidateSession s;  // its scratch directories go when it does: the zygote takes none of them
  s.host_kind = kind;
  const HostCommand cmd = host_command(ctx, s);
  return {ctx.zygotes->prewarm(cmd, host_environment(cmd), ctx.device.is_cuda() ? ctx.device.index() : -1)};
}

}  // namespace kforge::runner
