// run() and run_async(): one confined child driven by Boost.Asio without a thread per child.
//
// Per child, on a strand: async reads on the stdout/stderr pipes, async writes of stdin_data,
// a wall-clock timer (SIGTERM to the group, grace timer, SIGKILL to the group), and a
// polling timer that notices the child's exit with waitid(WNOHANG | WNOWAIT): the child
// stays a zombie (its pid and process-group id stay reserved) until the group has been
// killed, so kill(-pgid) can never hit an unrelated process. After the child exits, the
// pipes get a short drain window; grandchildren still holding them open are killed with the
// group and reading stops. No SIGCHLD handler is installed (SIGCHLD must not be ignored).
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include "spawn.hpp"

namespace kforge::sandbox {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// How long the pipes may stay open after the child exited (grandchildren holding them).
constexpr milliseconds kDrainWindow{200};
/// Exit polling: starts fast, backs off to this period.
constexpr milliseconds kMaxPoll{20};

class AsyncChild : public std::enable_shared_from_this<AsyncChild> {
 public:
  AsyncChild(asio::io_context& io, Spec spec, detail::Spawned sp, Clock::time_point t0,
             std::function<void(Result)> done)
      : io_(io),
        strand_(asio::make_strand(io)),
        spec_(std::move(spec)),
        pid_(sp.pid),
        t0_(t0),
        done_(std::move(done)),
        out_(strand_, sp.out_fd),
        err_(strand_, sp.err_fd),
        in_(strand_),
        wall_(strand_),
        grace_(strand_),
        poll_(strand_),
        drain_(strand_),
        out_cap_(spec_.limits.output_cap_bytes),
        err_cap_(spec_.limits.output_cap_bytes),
        out_buf_(1 << 16),
        err_buf_(1 << 16) {
    if (sp.in_fd >= 0) in_.assign(sp.in_fd);
  }

  ~AsyncChild() {
    if (!finished_ && pid_ > 0) {  // io_context went away first: do not leak the group
      ::kill(-pid_, SIGKILL);
      int ws = 0;
      while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
      }
    }
  }

  void start() {
    asio::post(strand_, [self = shared_from_this()] {
      self->read(true);
      self->read(false);
      if (self->in_.is_open()) self->write_stdin();
      if (self->spec_.limits.wall.count() > 0) {
        self->wall_.expires_at(self->t0_ + self->spec_.limits.wall);
        self->wall_.async_wait([self](const boost::system::error_code& ec) {
          if (!ec) self->on_wall_limit();
        });
      }
      self->schedule_poll(milliseconds(1));
    });
  }

 private:
  void read(bool is_out) {
    auto& d = is_out ? out_ : err_;
    auto& buf = is_out ? out_buf_ : err_buf_;
    d.async_read_some(asio::buffer(buf), [self = shared_from_this(), is_out](
                                             const boost::system::error_code& ec, std::size_t n) {
      if (self->finished_) return;
      if (n > 0) {
        auto& b = is_out ? self->out_buf_ : self->err_buf_;
        (is_out ? self->out_cap_ : self->err_cap_).add(b.data(), n);
      }
      if (!ec) {
        self->read(is_out);
        return;
      }
      // EOF (or an error, which ends this stream the same way).
      (is_out ? self->out_open_ : self->err_open_) = false;
      if (!self->out_open_ && !self->err_open_) self->check_exit();
    });
  }

  void write_stdin() {
    // Asio's descriptor writes use write(2), which raises SIGPIPE when the child has closed
    // its stdin; send(MSG_NOSIGNAL) on our socket end returns EPIPE instead.
    while (in_off_ < spec_.stdin_data.size()) {
      ssize_t n = ::send(in_.native_handle(), spec_.stdin_data.data() + in_off_,
                         spec_.stdin_data.size() - in_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        in_off_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        in_.async_wait(asio::posix::descriptor_base::wait_write,
                       [self = shared_from_this()](const boost::system::error_code& ec) {
                         if (self->finished_) return;
                         if (ec) {
                           boost::system::error_code ignore;
                           self->in_.close(ignore);
                           return;
                         }
                         self->write_stdin();
                       });
        return;
      }
      break;  // EPIPE and friends: the child does not want more input
    }
    boost::system::error_code ignore;
    in_.close(ignore);  // EOF for the child
  }

  void schedule_poll(milliseconds delay) {
    poll_.expires_after(delay);
    poll_.async_wait([self = shared_from_this(), delay](const boost::system::error_code& ec) {
      if (ec || self->finished_) return;
      self->check_exit();
      if (!self->finished_ && !self->exited_) self->schedule_poll(std::min(kMaxPoll, delay * 2));
    });
  }

  /// Notices a child exit without reaping it; finishes when the pipes are drained.
  void check_exit() {
    if (finished_) return;
    if (!exited_) {
      siginfo_t si{};
      int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOHANG | WNOWAIT);
      if (rc == 0 && si.si_pid == pid_) {
        exited_ = true;
      } else if (rc < 0 && errno == ECHILD) {  // reaped by someone else (SIGCHLD ignored?)
        exited_ = true;
        lost_ = true;
      } else {
        if (!out_open_ && !err_open_) schedule_poll(milliseconds(1));  // exit is imminent
        return;
      }
    }
    if (!out_open_ && !err_open_) {
      finish();
      return;
    }
    if (!draining_) {
      draining_ = true;
      drain_.expires_after(kDrainWindow);
      drain_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec) self->finish();
      });
    }
  }

  void on_wall_limit() {
    if (finished_ || exited_) return;
    timed_out_ = true;
    ::kill(-pid_, SIGTERM);
    grace_.expires_after(spec_.limits.grace);
    grace_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished_) return;
      ::kill(-self->pid_, SIGKILL);
      self->schedule_poll(milliseconds(1));
    });
    schedule_poll(milliseconds(1));
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    Result r;
    // The child is a zombie here, so its pgid still names our group: kill what is left
    // (grandchildren holding the pipes, background jobs), then reap.
    ::kill(-pid_, SIGKILL);
    int ws = 0;
    if (lost_) {
      r.status = Status::exited;
      r.error = "child was reaped outside kforge's sandbox (is SIGCHLD ignored?)";
    } else {
      while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
      }
      detail::decode_wait_status(ws, &r);
    }
    if (timed_out_) r.status = Status::timed_out;
    boost::system::error_code ignore;
    out_.close(ignore);
    err_.close(ignore);
    in_.close(ignore);
    wall_.cancel();
    grace_.cancel();
    poll_.cancel();
    drain_.cancel();
    r.out = out_cap_.text(&r.out_truncated);
    r.err = err_cap_.text(&r.err_truncated);
    r.wall = std::chrono::duration_cast<milliseconds>(Clock::now() - t0_);
    asio::post(io_, [done = std::move(done_), r = std::move(r)]() mutable { done(std::move(r)); });
  }

  asio::io_context& io_;
  asio::strand<asio::io_context::executor_type> strand_;
  Spec spec_;
  pid_t pid_;
  Clock::time_point t0_;
  std::function<void(Result)> done_;
  asio::posix::stream_descriptor out_, err_, in_;
  asio::steady_timer wall_, grace_, poll_, drain_;
  detail::OutputCap out_cap_, err_cap_;
  std::vector<char> out_buf_, err_buf_;
  std::size_t in_off_ = 0;
  bool out_open_ = true, err_open_ = true;
  bool exited_ = false, lost_ = false, draining_ = false, timed_out_ = false, finished_ = false;
};

}  // namespace

void run_async(boost::asio::io_context& io, Spec spec, std::function<void(Result)> done) {
  const auto t0 = Clock::now();
  detail::Spawned sp;
  std::string error;
  if (!detail::spawn(spec, !spec.stdin_data.empty(), &sp, &error)) {
    Result r;
    r.status = Status::failed_to_start;
    r.error = std::move(error);
    r.wall = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
    boost::asio::post(io, [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
    return;
  }
  auto child = std::make_shared<AsyncChild>(io, std::move(spec), sp, t0, std::move(done));
  child->start();
}

Result run(const Spec& spec) {
  boost::asio::io_context io;
  Result result;
  run_async(io, spec, [&result](Result r) { result = std::move(r); });
  io.run();
  return result;
}

}  // namespace kforge::sandbox
