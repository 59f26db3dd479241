// The judge's handle on one candidate host process (candidate_host.hpp).
#include "candidate_host.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "kforge/sandbox/confine.hpp"
#include "kforge/sandbox/sealed_copy.hpp"
#include "zygote.hpp"

extern char** environ;

namespace kforge::runner {

namespace {
using Clock = std::chrono::steady_clock;

std::string signal_text(int sig) {
  return std::to_string(sig) + " (" + strsignal(sig) + ")";
}

/// The host's command line: `prefix..., <artifact>, <device>, <first fd to close>, suffix...`;
/// `n_fds` counts every descriptor from 4 on, the artifact's sealed copy (the last) included.
std::vector<std::string> host_args(const HostCommand& cmd, const std::string& artifact, int device,
                                   std::size_t n_fds) {
  std::vector<std::string> args;
  for (const auto& a : cmd.prefix) args.push_back(a.find('/') != std::string::npos ? absolute_path(a) : a);
  args.insert(args.end(), {absolute_path(artifact), std::to_string(device), std::to_string(4 + n_fds)});
  for (const auto& a : cmd.suffix) args.push_back(absolute_path(a));
  return args;
}

/// What a forked host reads first on its channel (zygote.py read_spec): the command line,
/// environment and working directory it would have been spawned with.
std::string spec_line(const std::vector<std::string>& args, const std::vector<std::string>& env,
                      const std::string& cwd) {
  auto quote = [](const std::string& v) {
    std::string q = "\"";
    for (unsigned char c : v) {
      if (c == '"' || c == '\\') {
        q += '\\';
        q += static_cast<char>(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        q += buf;
      } else {
        q += static_cast<char>(c);
      }
    }
    return q + "\"";
  };
  auto list = [&](const std::vector<std::string>& v) {
    std::string l = "[";
    for (std::size_t i = 0; i < v.size(); ++i) l += (i ? "," : "") + quote(v[i]);
    return l + "]";
  };
  return "{\"argv\":" + list(args) + ",\"env\":" + list(env) + ",\"cwd\":" + quote(cwd) + "}\n";
}
}  // namespace

std::vector<std::string> host_environment(const HostCommand& cmd) {
  std::vector<std::string> env{"CUDA_CACHE_DISABLE=1", "HOME=/nonexistent", "LANG=C"};
  auto set_by_cmd = [&](const std::string& name) {
    return std::any_of(cmd.env.begin(), cmd.env.end(),
                       [&](const std::string& v) { return v.rfind(name + "=", 0) == 0; });
  };
  for (const char* name : {"PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING",
                           "OMP_NUM_THREADS", "KFORGE_HOST_NO_SECCOMP"})
    if (const char* v = std::getenv(name); v && !set_by_cmd(name)) env.push_back(std::string(name) + "=" + v);
  env.insert(env.end(), cmd.env.begin(), cmd.env.end());
  return env;
}

int sealed_artifact(const std::string& path, std::string* error) {
  const int src = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (src < 0) {
    *error = "the judge cannot read the artifact " + path + ": " + std::strerror(errno);
    return -1;
  }
  const sandbox::SealedCopy copy = sandbox::sealed_copy(src);
  ::close(src);
  if (copy) return copy.fd;
  *error = "the judge cannot copy the artifact " + path + " into a sealed memfd (" + copy.step +
           "): " + std::strerror(copy.error);
  return -1;
}

std::string absolute_path(const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  char cwd[4096];
  return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + p : p;
}

pid_t spawn_confined(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& cwd, int log_fd, const std::vector<int>& fds, std::string* error) {
  // Sources far above the targets, so that no dup2 maps a descriptor onto itself (which would
  // keep its close-on-exec flag).
  std::vector<int> src{::fcntl(log_fd, F_DUPFD_CLOEXEC, 512)};
  for (int fd : fds) src.push_back(::fcntl(fd, F_DUPFD_CLOEXEC, 512));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawn_file_actions_adddup2(&fa, src[0], 1);
  posix_spawn_file_actions_adddup2(&fa, src[0], 2);
  for (std::size_t i = 1; i < src.size(); ++i)
    posix_spawn_file_actions_adddup2(&fa, src[i], static_cast<int>(3 + i - 1));
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = argv, vars = env;
  std::vector<char*> argp, envp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  for (auto& e : vars) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args.front().c_str(), &fa, &at, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  for (int fd : src) ::close(fd);
  if (rc == 0) return pid;
  *error = "cannot start " + args.front() + ": " + std::strerror(rc);
  return -1;
}

std::unique_ptr<CandidateHost> CandidateHost::start(const HostCommand& cmd, const std::string& artifact,
                                                    int device, const std::vector<int>& fds,
                                                    std::string* error,
                                                    std::chrono::steady_clock::time_point ready_by) {
  if (cmd.prefix.empty()) throw std::invalid_argument("CandidateHost::start: empty host command");
  if (cmd.zygotes) {
    std::string why;
    if (auto h = launch(cmd, artifact, device, fds, true, &why, ready_by)) return h;
    if (why.rfind("the forked", 0) == 0) cmd.zygotes->host_failed();
    std::fprintf(stderr, "kforge-runner: no warm Triton host (%s); spawning one\n", why.c_str());
  }
  return launch(cmd, artifact, device, fds, false, error, ready_by);
}

std::unique_ptr<CandidateHost> CandidateHost::launch(const HostCommand& cmd, const std::string& artifact,
                                                     int device, const std::vector<int>& fds, bool forked,
                                                     std::string* error,
                                                     std::chrono::steady_clock::time_point ready_by) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<CandidateHost> h(new CandidateHost());
  h->channel_ = sv[0];
  h->log_fd_ = ::memfd_create("kforge-host-log", MFD_CLOEXEC);
  // The host reads no path: the artifact's bytes arrive sealed, as its last descriptor, so
  // nothing depends on the run directory's mode or owner (a 0700 --out, a root-only home).
  const int art = sealed_artifact(artifact, error);
  if (art < 0) {
    ::close(sv[1]);
    return nullptr;
  }
  const auto args = host_args(cmd, artifact, device, fds.size() + 1);
  const auto env = host_environment(cmd);
  std::vector<int> passed{sv[1]};
  passed.insert(passed.end(), fds.begin(), fds.end());
  passed.push_back(art);
  if (forked) {
    const std::string spec = spec_line(args, env, cmd.cwd);
    if (::send(h->channel_, spec.data(), spec.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(spec.size())) {
      *error = std::string("cannot write the host's command line: ") + std::strerror(errno);
      ::close(sv[1]);
      ::close(art);
      return nullptr;
    }
    std::vector<int> with_log{h->log_fd_};
    with_log.insert(with_log.end(), passed.begin(), passed.end());
    h->pid_ = cmd.zygotes->fork_host(cmd, env, device, with_log, error);
  } else {
    h->pid_ = spawn_confined(args, env, cmd.cwd, h->log_fd_, passed, error);
  }
  ::close(sv[1]);
  ::close(art);
  if (h->pid_ <= 0) {
    h->pid_ = -1;
    return nullptr;
  }
  HostFailure f;
  // The Triton host imports torch and triton and, on a GPU, compiles its warm-up kernel first.
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(ready_by - std::chrono::steady_clock::now());
  auto ready = h->read_line(std::max(left, std::chrono::milliseconds(1)), &f);
  if (!ready || *ready != "ready") {
    *error = std::string(forked ? "the forked Triton host" : "kforge-host") +
             " did not start: " + (ready ? *ready : f.message) + "\n" + h->log_tail();
    return nullptr;
  }
  if (cmd.keyed && !h->send_key(error)) return nullptr;
  h->forked_ = forked;
  return h;
}

bool CandidateHost::send_key(std::string* error) {
  unsigned char raw[16];
  if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
    *error = std::string("cannot draw the host's reply key: ") + std::strerror(errno);
    return false;
  }
  static const char* hex = "0123456789abcdef";
  std::string key;
  for (unsigned char c : raw) key += {hex[c >> 4], hex[c & 15]};
  const std::string line = "key " + key + "\n";
  if (::send(channel_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    *error = "the Triton host closed its channel before its key was sent\n" + log_tail();
    return false;
  }
  key_ = key + " ";
  return true;
}

CandidateHost::~CandidateHost() {
  kill();
  if (channel_ >= 0) ::close(channel_);
  if (log_fd_ >= 0) ::close(log_fd_);
}

void CandidateHost::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void CandidateHost::freeze() {
  if (pid_ <= 0 || frozen_) return;
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(pid_, SIGSTOP);
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &st, WUNTRACED)) < 0 && errno == EINTR) {
  }
  frozen_ = r == pid_ && WIFSTOPPED(st);
  last_freeze_us_ = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (r == pid_ && !WIFSTOPPED(st)) pid_ = -1;  // it died meanwhile; the next request reports EOF
}

void CandidateHost::resume() {
  if (pid_ > 0 && frozen_) ::kill(pid_, SIGCONT);
  frozen_ = false;
}

HostFailure CandidateHost::reap(const std::string& context) {
  HostFailure f{"runtime_error", "exit", ""};
  int st = 0;
  if (pid_ > 0) {
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (!violation_.empty()) {
    f = {"forbidden_api", "sandbox",
         "the candidate made a forbidden system call (" + violation_ +
             "): kernels may not start processes, open files for writing, use sockets or reach "
             "other processes"};
  } else if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    f.sub_kind = sig == SIGSEGV || sig == SIGBUS ? "segfault" : sig == SIGXFSZ ? "sandbox" : "signal";
    if (sig == SIGSYS)
      f = {"forbidden_api", "sandbox", "the candidate made a forbidden system call"};
    else
      f.message =
          "the candidate was killed by signal " + signal_text(sig) + " " + context +
          (sig == SIGSEGV ? " (inputs and parameters are mapped read-only: writing to one faults too)" : "");
  } else if (WIFEXITED(st)) {
    f.message = "the candidate's process exited with status " + std::to_string(WEXITSTATUS(st)) + " " +
                context + " (did the kernel call exit()?)";
  }
  std::string tail = log_tail();
  if (!tail.empty()) f.message += "\nthe candidate's output (tail):\n" + tail;
  return f;
}

std::optional<std::string> CandidateHost::read_line(std::chrono::milliseconds timeout, HostFailure* failure) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (line.rfind("violation ", 0) == 0) {  // "violation <nr>[ <path>]"
        const char* p = line.c_str() + 10;
        char* end = nullptr;
        violation_ = sandbox::syscall_name(static_cast<int>(std::strtol(p, &end, 10)));
        if (end && *end == ' ') violation_ += " of " + std::string(end + 1);
        continue;
      }
      if (!key_.empty()) {
        if (line.compare(0, key_.size(), key_) != 0) continue;  // the candidate's own line: never a reply
        line.erase(0, key_.size());
      }
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      kill();
      *failure = {"timeout", "",
                  "the candidate did not answer within " + std::to_string(timeout.count()) + " ms"};
      return std::nullopt;
    }
    pollfd p{channel_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char tmp[4096];
    ssize_t r = ::read(channel_, tmp, sizeof tmp);
    if (r > 0) {
      buf_.append(tmp, static_cast<std::size_t>(r));
      if (buf_.size() > (1u << 20)) buf_.erase(0, buf_.size() - (1u << 20));  // a flood is not a reply
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    *failure = reap("while it was being called");
    return std::nullopt;
  }
}

std::optional<std::string> CandidateHost::request(const std::string& line, std::chrono::milliseconds timeout,
                                                  HostFailure* failure, const std::string& expect,
                                                  bool freeze_on_reply) {
  if (pid_ <= 0) {
    *failure = reap("before it was called");
    return std::nullopt;
  }
  std::string s = line + "\n";
  if (::send(channel_, s.data(), s.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(s.size())) {
    *failure = reap("before it was called");
    return std::nullopt;
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto r = read_line(std::max(left, std::chrono::milliseconds(0)), failure);
    if (!r) return r;
    if (r->rfind(expect, 0) == 0) {
      replied_at_ = Clock::now();
      if (freeze_on_reply) freeze();
      return r;
    }
  }
}

bool CandidateHost::maps_file(const std::string& needle) const {
  if (pid_ <= 0) return false;
  std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find('/') != std::string::npos && line.find(needle) != std::string::npos) return true;
  return false;
}

int CandidateHost::thread_count() const {
  if (pid_ <= 0) return -1;
  DIR* d = ::opendir(("/proc/" + std::to_string(pid_) + "/task").c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

bool CandidateHost::pipeline(const std::vector<std::string>& lines, std::chrono::milliseconds timeout,
                             std::string* bad, HostFailure* failure) {
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  const char* p = all.data();
  std::size_t left = all.size();
  while (left > 0) {
    ssize_t n = ::send(channel_, p, left, MSG_NOSIGNAL);
    if (n <= 0) {
      *failure = reap("during set-up");
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
    // Drain replies meanwhile so that neither side blocks on a full socket buffer.
    char tmp[4096];
    ssize_t r;
    while ((r = ::recv(channel_, tmp, sizeof tmp, MSG_DONTWAIT)) > 0)
      buf_.append(tmp, static_cast<std::size_t>(r));
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto r = read_line(timeout, failure);
    if (!r) return false;
    if (*r != "ok" && bad->empty()) *bad = *r;
  }
  return true;
}

std::string CandidateHost::log_tail(std::size_t max_bytes) const {
  if (log_fd_ < 0) return "";
  off_t size = ::lseek(log_fd_, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = size > static_cast<off_t>(max_bytes) ? size - static_cast<off_t>(max_bytes) : 0;
  std::string s(static_cast<std::size_t>(size - from), '\0');
  ssize_t n = ::pread(log_fd_, s.data(), s.size(), from);
  s.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return s;
}

}  // namespace kforge::runner
