// The judge's warm Triton candidate hosts (zygote.hpp, backends/triton/zygote.py).
#include "zygote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "candidate_host.hpp"
#include "judge.hpp"

namespace kforge::runner {

namespace {

constexpr int kMaxFailuresInARow = 3;
constexpr auto kStartTimeout = std::chrono::milliseconds(180'000);  // imports torch and Triton
constexpr auto kForkTimeout = std::chrono::milliseconds(30'000);

/// Whether `cmd` is the Triton host's command line (python -I -S host.py ... SCRIPT): the one
/// shape a zygote forks.
bool is_triton_command(const HostCommand& cmd) {
  return cmd.prefix.size() == 4 && cmd.suffix.size() == 1;
}

/// The per-candidate part of a host's environment, left out of its zygote's.
bool per_candidate(const std::string& var) {
  return var.rfind("KFORGE_TRITON_SCRATCH=", 0) == 0;
}

/// One message from the zygote within `timeout` ("" on EOF, error or timeout).
std::string receive(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    return r > 0 ? std::string(buf, static_cast<std::size_t>(r)) : std::string();
  }
}

/// Sends "fork" with `fds` attached (SCM_RIGHTS).
bool send_fork(int fd, const std::vector<int>& fds) {
  char tag[] = "fork";
  iovec iov{tag, 4};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL) == 4;
}

/// Whether `pid` is a child of this process (waitid answers ECHILD for any other).
bool is_own_child(pid_t pid) {
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT) ==
         0;
}

/// Kills and reaps `pid` when it is this process's child (a spare the zygote forked for it).
void reap_spare(pid_t pid) {
  if (pid <= 0 || !is_own_child(pid)) return;
  ::kill(pid, SIGKILL);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}
}  // namespace

bool Zygotes::enabled_by_environment() {
  const char* v = std::getenv("KFORGE_TRITON_ZYGOTE");
  return !(v && std::strcmp(v, "0") == 0);
}

Zygotes::~Zygotes() {
  for (auto& [key, z] : zygotes_) stop(z);
}

void Zygotes::stop(Zygote& z) {
  reap_spare(z.spare);
  if (z.control >= 0) ::close(z.control);  // its recv sees EOF: it exits
  if (z.pid > 0) {
    ::kill(z.pid, SIGKILL);
    int st = 0;
    while (::waitpid(z.pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (z.log_fd >= 0) ::close(z.log_fd);
  if (!z.workdir.empty()) ::rmdir(z.workdir.c_str());
  z = Zygote{};
}

std::string Zygotes::log_tail(const Zygote& z) {
  if (z.log_fd < 0) return "";
  const off_t size = ::lseek(z.log_fd, 0, SEEK_END);
  if (size <= 0) return "";
  const off_t from = size > 2000 ? size - 2000 : 0;
  std::string s(static_cast<std::size_t>(size - from), '\0');
  const ssize_t n = ::pread(z.log_fd, s.data(), s.size(), from);
  s.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return s;
}

bool Zygotes::spawn(Zygote& z, const HostCommand& cmd, const std::vector<std::string>& env, int device,
                    std::string* error) {
  // {python, -I, -B, host.py} + {libkforge_pyconfine.so}: zygote.py lies beside host.py.
  const std::string host_py = absolute_path(cmd.prefix[3]);
  const std::string script = host_py.substr(0, host_py.rfind('/') + 1) + "zygote.py";
  std::vector<std::string> args{
      absolute_path(cmd.prefix[0]), cmd.prefix[1],         cmd.prefix[2], script, host_py,
      absolute_path(cmd.suffix[0]), std::to_string(device)};
  std::vector<std::string> vars;
  for (const auto& v : env)
    if (!per_candidate(v)) vars.push_back(v);
  std::string tmpl = host_temp_dir() + "/kforge-zygote-XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    *error = std::string("cannot create the zygote's working directory: ") + std::strerror(errno);
    return false;
  }
  ::chmod(tmpl.c_str(), 0555);
  z.workdir = tmpl;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  z.control = sv[0];
  z.log_fd = ::memfd_create("kforge-zygote-log", MFD_CLOEXEC);
  // The zygote never touches the device; its spare hosts initialise CUDA on it.
  z.pid = spawn_confined(args, vars, z.workdir, z.log_fd, {sv[1]}, error);
  ::close(sv[1]);
  if (z.pid <= 0) {
    z.pid = -1;
    return false;
  }
  return true;
}

bool Zygotes::await_ready(Zygote& z, std::string* error) {
  const std::string ready = receive(z.control, kStartTimeout);
  if (ready != "ready") {
    *error = "the Triton zygote did not start: " + (ready.empty() ? std::string("no reply") : ready) + "\n" +
             log_tail(z);
    return false;
  }
  z.ready = true;
  // What its warm-up said (Triton's compiler warmed, or why not): one line for whoever reads the
  // runner's log; the zygote writes nothing else before its first fork.
  const std::string said = log_tail(z);
  if (!said.empty()) std::fprintf(stderr, "kforge-runner: Triton zygote ready: %s", said.c_str());
  return true;
}

pid_t Zygotes::request_fork(Zygote& z, const std::vector<int>& fds, std::string* error) {
  int was_subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper, 0, 0, 0);
  // While the zygote's middle process exits, its child (the host) is adopted by the nearest
  // subreaper among its ancestors: this process.
  if (!was_subreaper && ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    *error = std::string("PR_SET_CHILD_SUBREAPER: ") + std::strerror(errno);
    return -1;
  }
  std::string reply;
  if (send_fork(z.control, fds)) reply = receive(z.control, kForkTimeout);
  if (!was_subreaper) ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  if (reply.rfind("pid ", 0) != 0) {
    *error = "the Triton zygote " + (reply.empty() ? std::string("did not answer") : "refused: " + reply) +
             "\n" + log_tail(z);
    return -1;
  }
  // "pid <host> [spare <next>]": a spare it did not hand this host is dead or broken.
  const pid_t pid = static_cast<pid_t>(std::atol(reply.c_str() + 4));
  if (pid != z.spare) reap_spare(z.spare);
  z.spare = -1;
  if (const auto at = reply.find(" spare "); at != std::string::npos) {
    const pid_t spare = static_cast<pid_t>(std::atol(reply.c_str() + at + 7));
    if (spare > 0 && spare != pid && is_own_child(spare)) z.spare = spare;
  }
  if (pid <= 0 || !is_own_child(pid)) {
    // Never signalled: not this process's child, so its pid proves nothing.
    *error = "the Triton zygote's host " + reply.substr(4) + " is not the judge's child";
    return -1;
  }
  return pid;
}

std::string Zygotes::key_of(const HostCommand& cmd, const std::vector<std::string>& env, int device) {
  std::string key = std::to_string(device);
  for (const auto& part : {cmd.prefix, cmd.suffix, env})
    for (const auto& s : part)
      if (!per_candidate(s)) key += '\0' + s;
  return key;
}

bool Zygotes::prewarm(const HostCommand& cmd, const std::vector<std::string>& env, int device) {
  if (failures_in_a_row_ >= kMaxFailuresInARow || !is_triton_command(cmd)) return false;
  Zygote& z = zygotes_[key_of(cmd, env, device)];
  if (z.pid > 0) return false;
  std::string error;
  if (spawn(z, cmd, env, device, &error)) return true;
  stop(z);
  std::fprintf(stderr, "kforge-runner: the Triton zygote was not prewarmed: %s\n", error.c_str());
  return false;
}

pid_t Zygotes::fork_host(const HostCommand& cmd, const std::vector<std::string>& env, int device,
                         const std::vector<int>& fds, std::string* error) {
  if (failures_in_a_row_ >= kMaxFailuresInARow) {
    *error = "the Triton zygote failed " + std::to_string(kMaxFailuresInARow) + " times in a row";
    return -1;
  }
  if (!is_triton_command(cmd)) {
    *error = "not a Triton host command";
    return -1;
  }
  Zygote& z = zygotes_[key_of(cmd, env, device)];
  if ((z.pid <= 0 && !spawn(z, cmd, env, device, error)) || (!z.ready && !await_ready(z, error))) {
    stop(z);
    ++failures_in_a_row_;
    return -1;
  }
  const pid_t pid = request_fork(z, fds, error);
  if (pid <= 0) {
    stop(z);  // restarted at the next request
    ++failures_in_a_row_;
    return -1;
  }
  failures_in_a_row_ = 0;
  return pid;
}

}  // namespace kforge::runner
