// Fork+exec of one confined child (see spawn.hpp). Everything the child needs is prepared
// before fork(); between fork() and execve() only async-signal-safe system calls run.
#include "spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

extern char** environ;

namespace kforge::sandbox {

std::vector<std::string> Spec::default_env_allow() {
  return {// basics
          "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
          // devices and vendor toolchains
          "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_CACHE_PATH",
          "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "HIP_VISIBLE_DEVICES",
          "ROCR_VISIBLE_DEVICES", "ROCM_PATH",
          // compilers and linkers
          "CC", "CXX", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
          "PKG_CONFIG_PATH",
          // Python, Triton, OpenMP, kforge itself
          "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "TRITON_CACHE_DIR", "TRITON_HOME",
          "XDG_CACHE_HOME", "OMP_NUM_THREADS", "KFORGE_HOME"};
}

const char* to_string(Status s) {
  switch (s) {
    case Status::exited:
      return "exited";
    case Status::signalled:
      return "signalled";
    case Status::timed_out:
      return "timed_out";
    case Status::failed_to_start:
      return "failed_to_start";
  }
  return "unknown";
}

}  // namespace kforge::sandbox

namespace kforge::sandbox::detail {
namespace {

// ---- helpers used in the parent -------------------------------------------------------

bool allow_matches(const std::string& pattern, std::string_view name) {
  if (!pattern.empty() && pattern.back() == '*') {
    std::string_view prefix(pattern.data(), pattern.size() - 1);
    return name.substr(0, prefix.size()) == prefix;
  }
  return name == pattern;
}

/// Moves fd to a number >= 3 (so dup2 onto 0/1/2 in the child cannot clobber it).
int fd_above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

/// Resolves argv0 like execvp but against the child's PATH, before fork. "" on failure with
/// *err set to the errno that execvp would report.
std::string resolve_program(const std::string& argv0, const std::vector<std::string>& env,
                            const std::filesystem::path& cwd, int* err) {
  if (argv0.find('/') != std::string::npos) return argv0;  // exec reports its own errors
  std::string path_var;
  bool have_path = false;
  for (const auto& kv : env)
    if (kv.rfind("PATH=", 0) == 0) {
      path_var = kv.substr(5);
      have_path = true;
    }
  if (!have_path) path_var = "/usr/local/bin:/usr/bin:/bin";
  *err = ENOENT;
  std::size_t pos = 0;
  while (pos <= path_var.size()) {
    auto colon = path_var.find(':', pos);
    if (colon == std::string::npos) colon = path_var.size();
    std::string dir = path_var.substr(pos, colon - pos);
    pos = colon + 1;
    if (dir.empty()) dir = ".";
    std::filesystem::path cand = std::filesystem::path(dir) / argv0;
    if (cand.is_relative()) {
      std::error_code ec;
      cand = std::filesystem::absolute(cwd.empty() ? cand : cwd / cand, ec);
      if (ec) continue;
    }
    struct stat st {};
    if (::stat(cand.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(cand.c_str(), X_OK) == 0) return cand.string();
    *err = EACCES;
  }
  return {};
}

// ---- the child side -------------------------------------------------------------------

enum Stage : int { st_stdin = 1, st_dup2, st_chdir, st_rlimit, st_exec };

struct ChildReport {
  int stage;
  int err;
};

struct RlimitPlan {
  int resource;
  rlim_t soft;
  rlim_t hard;
};

struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: inherit
  int in_fd = -1;             // child end; -1: /dev/null
  int out_fd = -1;
  int err_fd = -1;
  int status_fd = -1;
  bool isolate_network = false;
  bool netns_only_as_root = false;
  const char* uid_map = nullptr;
  const char* gid_map = nullptr;
  RlimitPlan rlimits[4]{};
  int n_rlimits = 0;
};

void write_all_raw(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void write_proc_file(const char* path, const char* text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  write_all_raw(fd, text, std::strlen(text));
  ::close(fd);
}

[[noreturn]] void child_fail(const ChildPlan& p, int stage, int err) {
  ChildReport rep{stage, err};
  write_all_raw(p.status_fd, &rep, sizeof rep);
  ::_exit(127);
}

int dup_onto(int from, int to) {
  if (from == to) return ::fcntl(to, F_SETFD, 0);  // dup2 would keep FD_CLOEXEC
  return ::dup2(from, to) < 0 ? -1 : 0;
}

[[noreturn]] void child_main(const ChildPlan& p) noexcept {
  // Signals: nothing blocked, default dispositions (ignored ones survive exec otherwise).
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);  // EINVAL for KILL/STOP: fine

  ::setpgid(0, 0);

  if (p.isolate_network) {
    // A private network namespace (only loopback, down). Needs a user namespace when
    // unprivileged; map our own ids so files and tools see the same uid/gid. Failure
    // (EPERM in many containers, seccomp) leaves the network as it is.
    if (p.netns_only_as_root && ::geteuid() == 0 && ::unshare(CLONE_NEWNET) == 0) {
      // root keeps its user namespace (Spec::network_without_userns_as_root)
    } else if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
      write_proc_file("/proc/self/setgroups", "deny");
      write_proc_file("/proc/self/uid_map", p.uid_map);
      write_proc_file("/proc/self/gid_map", p.gid_map);
    } else {
      ::unshare(CLONE_NEWNET);  // works where we hold CAP_SYS_ADMIN
    }
  }

  int in = p.in_fd;
  if (in < 0) {
    in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) child_fail(p, st_stdin, errno);
    if (in <= 2 && in != 0) {  // keep it off 1/2 before they are replaced
      int moved = ::fcntl(in, F_DUPFD_CLOEXEC, 3);
      ::close(in);
      in = moved;
    }
  }
  if (dup_onto(in, 0) < 0 || dup_onto(p.out_fd, 1) < 0 || dup_onto(p.err_fd, 2) < 0)
    child_fail(p, st_dup2, errno);

  // Close every other descriptor except the status pipe (which is O_CLOEXEC).
  const unsigned sfd = static_cast<unsigned>(p.status_fd);
  bool closed = false;
#ifdef SYS_close_range
  if (sfd >= 3) {
    long a = sfd > 3 ? ::syscall(SYS_close_range, 3u, sfd - 1, 0u) : 0;
    long b = ::syscall(SYS_close_range, sfd + 1, ~0u, 0u);
    closed = (a == 0 && b == 0);
  }
#endif
  if (!closed) {
    struct rlimit nofile {};
    long maxfd = 65536;
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
      maxfd = std::min<long>(static_cast<long>(nofile.rlim_cur), 65536);
    for (long fd = 3; fd < maxfd; ++fd)
      if (fd != p.status_fd) ::close(static_cast<int>(fd));
  }

  if (p.cwd && ::chdir(p.cwd) != 0) child_fail(p, st_chdir, errno);

  for (int i = 0; i < p.n_rlimits; ++i) {
    struct rlimit cur {};
    ::getrlimit(p.rlimits[i].resource, &cur);
    struct rlimit want {};
    want.rlim_cur = p.rlimits[i].soft;
    want.rlim_max = p.rlimits[i].hard;
    if (cur.rlim_max != RLIM_INFINITY) {  // cannot raise a hard limit: clamp
      want.rlim_max = std::min(want.rlim_max, cur.rlim_max);
      want.rlim_cur = std::min(want.rlim_cur, cur.rlim_max);
    }
    if (::setrlimit(p.rlimits[i].resource, &want) != 0) child_fail(p, st_rlimit, errno);
  }

  ::execve(p.path, p.argv, p.envp);
  child_fail(p, st_exec, errno);
}

std::string describe_failure(const ChildReport& rep, const Spec& spec) {
  std::string why = std::strerror(rep.err);
  switch (rep.stage) {
    case st_stdin:
      return "open /dev/null: " + why;
    case st_dup2:
      return "dup2: " + why;
    case st_chdir:
      return "chdir " + spec.cwd.string() + ": " + why;
    case st_rlimit:
      return "setrlimit: " + why;
    case st_exec:
      return spec.argv[0] + ": " + why;
    default:
      return "child setup failed: " + why;
  }
}

}  // namespace

bool looks_secret(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const char* bad : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"})
    if (up.find(bad) != std::string::npos) return true;
  return false;
}

std::vector<std::string> build_env(const Spec& spec) {
  std::vector<std::string> env;
  std::set<std::string> seen;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string name(kv.substr(0, eq));
    if (spec.env_set.count(name) || seen.count(name) || looks_secret(name)) continue;
    bool allowed = std::any_of(spec.env_allow.begin(), spec.env_allow.end(),
                               [&](const std::string& pat) { return allow_matches(pat, name); });
    if (!allowed) continue;
    seen.insert(name);
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : spec.env_set) env.push_back(k + "=" + v);
  return env;
}

void decode_wait_status(int wstatus, Result* r) {
  if (WIFEXITED(wstatus)) {
    r->status = Status::exited;
    r->exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    r->status = Status::signalled;
    r->term_signal = WTERMSIG(wstatus);
  }
}

namespace {

/// The child's rlimits from `L`: CPU seconds (the soft limit sends SIGXCPU, the hard one a
/// second later SIGKILL), processes, file size where set; core dumps always off.
void set_rlimits(ChildPlan& plan, const Limits& L) {
  if (L.cpu_seconds > 0)
    plan.rlimits[plan.n_rlimits++] = {RLIMIT_CPU, static_cast<rlim_t>(L.cpu_seconds),
                                      static_cast<rlim_t>(L.cpu_seconds + 1)};
  if (L.max_processes > 0)
    plan.rlimits[plan.n_rlimits++] = {RLIMIT_NPROC, static_cast<rlim_t>(L.max_processes),
                                      static_cast<rlim_t>(L.max_processes)};
  if (L.max_file_bytes > 0)
    plan.rlimits[plan.n_rlimits++] = {RLIMIT_FSIZE, static_cast<rlim_t>(L.max_file_bytes),
                                      static_cast<rlim_t>(L.max_file_bytes)};
  plan.rlimits[plan.n_rlimits++] = {RLIMIT_CORE, 0, 0};
}

/// Reads the status pipe to its end: true when it carried a whole ChildReport (the child failed
/// before execve and says where), false at EOF (the pipe is O_CLOEXEC: execve closed it).
bool read_child_report(int fd, ChildReport* rep) {
  std::size_t got = 0;
  while (got < sizeof *rep) {
    ssize_t n = ::read(fd, reinterpret_cast<char*>(rep) + got, sizeof *rep - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got == sizeof *rep;
}

/// The child's descriptors: stdout, stderr and status pipes and, with `stdin_pipe`, a socket
/// pair for its stdin (the child's end read-only), all O_CLOEXEC and moved above 2. false, errno
/// set, when one cannot be made (the caller closes those that were).
bool open_pipes(bool stdin_pipe, int out_p[2], int err_p[2], int st_p[2], int in_s[2]) {
  if (::pipe2(out_p, O_CLOEXEC) != 0 || ::pipe2(err_p, O_CLOEXEC) != 0 || ::pipe2(st_p, O_CLOEXEC) != 0 ||
      (stdin_pipe && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_s) != 0))
    return false;
  for (int* fd : {&out_p[0], &out_p[1], &err_p[0], &err_p[1], &st_p[0], &st_p[1]}) *fd = fd_above_stdio(*fd);
  if (stdin_pipe) {
    in_s[0] = fd_above_stdio(in_s[0]);
    in_s[1] = fd_above_stdio(in_s[1]);
    ::shutdown(in_s[1], SHUT_WR);  // the child only reads its end
  }
  return true;
}

/// What the child's plan points into: its argv, environment, directory and id maps, made
/// before fork (the child allocates nothing).
struct ChildStrings {
  std::vector<std::string> env;
  std::string path, cwd, uid_map, gid_map;
  std::vector<char*> argv, envp;
};

/// Fills `plan` (pointing into `s`, which must outlive it) from `spec`; false with `error` set
/// when the program cannot be found.
bool make_plan(const Spec& spec, ChildStrings& s, ChildPlan& plan, std::string* error) {
  s.env = build_env(spec);
  int resolve_err = 0;
  s.path = resolve_program(spec.argv[0], s.env, spec.cwd, &resolve_err);
  if (s.path.empty()) {
    *error = spec.argv[0] + ": " + std::strerror(resolve_err);
    return false;
  }
  for (const auto& a : spec.argv) s.argv.push_back(const_cast<char*>(a.c_str()));
  s.argv.push_back(nullptr);
  for (const auto& e : s.env) s.envp.push_back(const_cast<char*>(e.c_str()));
  s.envp.push_back(nullptr);
  s.cwd = spec.cwd.string();
  const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  s.uid_map = uid + " " + uid + " 1\n";
  s.gid_map = gid + " " + gid + " 1\n";
  plan.path = s.path.c_str();
  plan.argv = s.argv.data();
  plan.envp = s.envp.data();
  plan.cwd = s.cwd.empty() ? nullptr : s.cwd.c_str();
  plan.isolate_network = spec.isolate_network;
  plan.netns_only_as_root = spec.network_without_userns_as_root;
  plan.uid_map = s.uid_map.c_str();
  plan.gid_map = s.gid_map.c_str();
  set_rlimits(plan, spec.limits);
  return true;
}

}  // namespace

bool spawn(const Spec& spec, bool stdin_pipe, Spawned* out, std::string* error) {
  *out = Spawned{};
  if (spec.argv.empty() || spec.argv[0].empty()) {
    *error = "empty argv";
    return false;
  }
  // Everything the child needs, allocated now.
  ChildStrings strings;
  ChildPlan plan;
  if (!make_plan(spec, strings, plan, error)) return false;

  // --- descriptors (parent ends O_CLOEXEC; child ends are dup2'ed onto 0/1/2) ---
  int out_p[2] = {-1, -1}, err_p[2] = {-1, -1}, st_p[2] = {-1, -1}, in_s[2] = {-1, -1};
  auto cleanup = [&] {
    for (int* fd : {&out_p[0], &out_p[1], &err_p[0], &err_p[1], &st_p[0], &st_p[1], &in_s[0], &in_s[1]})
      close_fd(*fd);
  };
  if (!open_pipes(stdin_pipe, out_p, err_p, st_p, in_s)) {
    *error = std::string("pipe: ") + std::strerror(errno);
    cleanup();
    return false;
  }
  plan.in_fd = stdin_pipe ? in_s[1] : -1;
  plan.out_fd = out_p[1];
  plan.err_fd = err_p[1];
  plan.status_fd = st_p[1];

  pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    cleanup();
    return false;
  }
  if (pid == 0) child_main(plan);

  // Also from the parent, so kill(-pid) is valid however the scheduler orders things.
  ::setpgid(pid, pid);
  close_fd(out_p[1]);
  close_fd(err_p[1]);
  close_fd(st_p[1]);
  close_fd(in_s[1]);

  // The status pipe reaches EOF at execve (O_CLOEXEC) or carries the failure.
  ChildReport rep{};
  const bool failed = read_child_report(st_p[0], &rep);
  close_fd(st_p[0]);
  if (failed) {
    *error = describe_failure(rep, spec);
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    cleanup();
    return false;
  }
  out->pid = pid;
  out->in_fd = in_s[0];
  out->out_fd = out_p[0];
  out->err_fd = err_p[0];
  return true;
}

// ---- output capture ---------------------------------------------------------------------

void OutputCap::add(const char* p, std::size_t n) {
  total_ += n;
  if (cap_ == 0) {
    head_.append(p, n);
    return;
  }
  const std::size_t hcap = cap_ / 2, tcap = cap_ - hcap;
  if (head_.size() < hcap) {
    std::size_t take = std::min(n, hcap - head_.size());
    head_.append(p, take);
    p += take;
    n -= take;
  }
  if (n == 0) return;
  tail_.append(p, n);
  if (tail_.size() > 2 * tcap + 4096) tail_.erase(0, tail_.size() - tcap);
}

std::string OutputCap::text(bool* truncated) const {
  if (cap_ == 0 || total_ <= cap_) {
    *truncated = false;
    return head_ + tail_;
  }
  *truncated = true;
  const std::size_t tcap = cap_ - cap_ / 2;
  const std::size_t dropped = total_ - head_.size() - tcap;
  std::string out = head_;
  out += "\n... [" + std::to_string(dropped) + " bytes truncated] ...\n";
  out.append(tail_, tail_.size() - tcap, tcap);
  return out;
}

void TailBuffer::add(const char* p, std::size_t n) {
  buf_.append(p, n);
  if (cap_ > 0 && buf_.size() > 2 * cap_ + 4096) {
    dropped_ += buf_.size() - cap_;
    buf_.erase(0, buf_.size() - cap_);
  }
}

std::string TailBuffer::text() const {
  if (cap_ == 0 || buf_.size() <= cap_) {
    if (dropped_ == 0) return buf_;
    return "... [" + std::to_string(dropped_) + " bytes truncated] ...\n" + buf_;
  }
  return "... [" + std::to_string(dropped_ + buf_.size() - cap_) + " bytes truncated] ...\n" +
         buf_.substr(buf_.size() - cap_);
}

}  // namespace kforge::sandbox::detail
