// LineChild: a long-lived confined worker speaking lines over stdin/stdout, driven with
// poll(2) on the owner's thread. stderr is drained whenever we wait on the child, so a
// chatty child can never block on a full stderr pipe while we wait for its stdout.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>

#include "spawn.hpp"

namespace kforge::sandbox {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct LineChild::Impl {
  pid_t pid = -1;
  int in_fd = -1, out_fd = -1, err_fd = -1;
  std::string pending;  // stdout bytes not yet returned as lines
  detail::TailBuffer err_tail{0};
  std::size_t max_line = 0;  // Limits::max_line_bytes
  bool exited = false;       // seen as a zombie (not reaped)
  bool reaped = false;
  std::mutex reap_mu;  // held while reaping and by kill_group: no signal reaches a reused pid
  Result final;
  Clock::time_point t0;

  explicit Impl(std::size_t cap) : err_tail(cap) {}

  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }

  /// Reads what is available on stdout (into pending) and stderr (into the tail).
  /// On EOF or a read error the descriptor is closed (fd becomes -1).
  void drain_fd(int& fd, bool is_out) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        if (is_out) {
          pending.append(buf, static_cast<std::size_t>(n));
          if (max_line != 0 && pending.size() >= max_line) return;  // read_line hands out a piece
        } else {
          err_tail.add(buf, static_cast<std::size_t>(n));
        }
        if (static_cast<std::size_t>(n) < sizeof buf) return;  // probably empty now
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close_fd(fd);  // EOF or error
      return;
    }
  }

  /// Waits up to `timeout` for output (and, when want_write, for room in the child's stdin),
  /// reading whatever arrives on stdout (into pending) and stderr (into the tail): a child
  /// blocked on a full stdout or stderr pipe would otherwise never read its stdin.
  /// Returns true when stdout produced data or reached EOF, or stdin became writable.
  bool wait_io(milliseconds timeout, bool want_write) {
    pollfd fds[3];
    int n = 0, io = -1, ie = -1, iw = -1;
    if (out_fd >= 0) fds[io = n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[ie = n++] = {err_fd, POLLIN, 0};
    if (want_write && in_fd >= 0) fds[iw = n++] = {in_fd, POLLOUT, 0};
    if (n == 0) {
      std::this_thread::sleep_for(std::min(timeout, milliseconds(10)));
      return false;
    }
    int rc = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(timeout.count()));
    if (rc <= 0) return false;
    bool progress = false;
    if (ie >= 0 && fds[ie].revents) drain_fd(err_fd, false);
    if (io >= 0 && fds[io].revents) {
      drain_fd(out_fd, true);
      progress = true;
    }
    if (iw >= 0 && fds[iw].revents) progress = true;
    return progress;
  }

  bool zombie() {
    if (reaped || exited) return true;
    siginfo_t si{};
    int rc = ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT);
    if ((rc == 0 && si.si_pid == pid) || (rc < 0 && errno == ECHILD)) exited = true;
    return exited;
  }

  /// Kills what is left of the group and reaps the child (which must have exited or be dying).
  Result reap(bool timed_out) {
    std::lock_guard lk(reap_mu);
    if (reaped) return final;
    ::kill(-pid, SIGKILL);
    int ws = 0;
    Result r;
    pid_t w;
    while ((w = ::waitpid(pid, &ws, 0)) < 0 && errno == EINTR) {
    }
    if (w == pid) {
      detail::decode_wait_status(ws, &r);
    } else {
      r.status = Status::exited;
      r.error = "child was reaped outside kforge's sandbox (is SIGCHLD ignored?)";
    }
    if (timed_out) r.status = Status::timed_out;
    // Collect what the pipes still hold (the group is dead, so EOF comes promptly).
    for (int* fd : {&out_fd, &err_fd})
      if (*fd >= 0) {
        int fl = ::fcntl(*fd, F_GETFL);
        ::fcntl(*fd, F_SETFL, fl | O_NONBLOCK);
        drain_fd(*fd, fd == &out_fd);
      }
    close_fd(in_fd);
    close_fd(out_fd);
    close_fd(err_fd);
    r.out = pending;
    r.err = err_tail.text();
    r.wall = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
    reaped = true;
    final = r;
    return r;
  }
};

std::unique_ptr<LineChild> LineChild::start(const Spec& spec, std::string* error) {
  auto t0 = Clock::now();
  detail::Spawned sp;
  std::string err;
  if (!detail::spawn(spec, /*stdin_pipe=*/true, &sp, &err)) {
    if (error) *error = err;
    return nullptr;
  }
  std::unique_ptr<LineChild> c(new LineChild());
  c->impl_ = std::make_unique<Impl>(spec.limits.output_cap_bytes);
  auto& I = *c->impl_;
  I.pid = sp.pid;
  I.in_fd = sp.in_fd;
  I.out_fd = sp.out_fd;
  I.err_fd = sp.err_fd;
  I.t0 = t0;
  I.max_line = spec.limits.max_line_bytes;
  for (int fd : {I.out_fd, I.err_fd}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return c;
}

LineChild::~LineChild() {
  if (impl_ && !impl_->reaped) impl_->reap(false);
}

bool LineChild::write_line(std::string_view line) {
  auto& I = *impl_;
  if (I.reaped || I.in_fd < 0) return false;
  std::string data(line);
  data.push_back('\n');
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(I.in_fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The child is not reading right now: wait for room, draining its stderr meanwhile.
      if (I.zombie()) return false;
      I.wait_io(milliseconds(100), /*want_write=*/true);
      continue;
    }
    return false;  // EPIPE: the child closed its stdin or died
  }
  return true;
}

std::optional<std::string> LineChild::read_line(milliseconds timeout) {
  auto& I = *impl_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto nl = I.pending.find('\n');
    // A line longer than max_line (its newline beyond it, or none yet) goes out in pieces.
    if (I.max_line != 0 && (nl == std::string::npos ? I.pending.size() >= I.max_line : nl > I.max_line)) {
      std::string piece = I.pending.substr(0, I.max_line);
      I.pending.erase(0, I.max_line);
      return piece;
    }
    if (nl != std::string::npos) {
      std::string line = I.pending.substr(0, nl);
      I.pending.erase(0, nl + 1);
      return line;
    }
    if (I.out_fd < 0) {  // EOF: an unterminated last line is still a line
      if (I.pending.empty()) return std::nullopt;
      std::string line;
      line.swap(I.pending);
      return line;
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return std::nullopt;
    if (!I.wait_io(left, false) && Clock::now() >= deadline) {
      // One last non-blocking look, then give up.
      if (I.out_fd >= 0) I.drain_fd(I.out_fd, true);
      if (I.pending.find('\n') == std::string::npos && I.out_fd >= 0) return std::nullopt;
    }
  }
}

bool LineChild::alive() {
  return !impl_->zombie();
}

Result LineChild::terminate(milliseconds grace) {
  auto& I = *impl_;
  if (I.reaped) return I.final;
  if (!I.zombie()) {
    ::kill(-I.pid, SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (!I.zombie() && Clock::now() < deadline) {
      I.wait_io(milliseconds(5), false);  // keep draining so the child can exit
      if (I.out_fd < 0 && I.err_fd < 0) std::this_thread::sleep_for(milliseconds(2));
    }
  }
  return I.reap(false);
}

Result LineChild::wait() {
  auto& I = *impl_;
  if (I.reaped) return I.final;
  while (!I.zombie()) {
    I.wait_io(milliseconds(20), false);
  }
  return I.reap(false);
}

void LineChild::kill_group() {
  auto& I = *impl_;
  std::lock_guard lk(I.reap_mu);
  if (!I.reaped) ::kill(-I.pid, SIGKILL);
}

std::string LineChild::stderr_tail() const {
  return impl_->err_tail.text();
}

int LineChild::pid() const {
  return impl_->pid;
}

}  // namespace kforge::sandbox
