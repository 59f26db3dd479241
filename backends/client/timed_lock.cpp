// backends/client/timed_lock.cpp — the per-device lock for timed work (timed_lock.hpp). Compiled
// into kforge_backends and, as it is, into kforge-runner: POSIX and the standard library only.
#include "kforge/backends/timed_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace kforge::backends {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// flock with EINTR retried; `op` LOCK_EX or LOCK_SH; `wait`: block, else LOCK_NB.
bool lock_fd(int fd, int op, bool wait) {
  for (;;) {
    if (::flock(fd, op | (wait ? 0 : LOCK_NB)) == 0) return true;
    if (errno != EINTR) return false;
  }
}

/// Takes the lock on `fd` by `until` (time_point::max(): as long as it takes), polled every 2 ms.
bool lock_until(int fd, int op, Clock::time_point until) {
  if (until == Clock::time_point::max()) return lock_fd(fd, op, true);
  for (;;) {
    if (lock_fd(fd, op, false)) return true;
    if (errno != EWOULDBLOCK || Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int open_lock_file(const std::string& path) {
  return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
}

}  // namespace

TimedHold& TimedHold::operator=(TimedHold&& o) noexcept {
  if (this != &o) {
    release();
    state_ = o.state_;
    waited_ms_ = o.waited_ms_;
    why_ = std::move(o.why_);
    release_ = std::move(o.release_);
    o.state_ = State::unavailable;
    o.release_ = nullptr;
  }
  return *this;
}

void TimedHold::release() {
  if (release_) {
    auto f = std::move(release_);
    release_ = nullptr;
    f();
  }
  if (state_ == State::held) state_ = State::unavailable, why_ = "released";
}

std::string FlockTimedLock::default_dir() {
  if (const char* d = std::getenv("KFORGE_LOCK_DIR"); d && *d) return d;
  if (::geteuid() == 0) return "/run/kforge-locks";
  return "/tmp/kforge-locks-" + std::to_string(::geteuid());
}

std::string FlockTimedLock::prepare_dir(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') return "the lock directory '" + dir + "' is not an absolute path";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return "cannot create the lock directory " + dir + ": " + std::strerror(errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "cannot stat " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory (a link or a file)";
  if (st.st_uid != ::geteuid())
    return dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user";
  if ((st.st_mode & 077) != 0) return dir + " is open to other users (mode must be 0700)";
  return "";
}

TimedHold FlockTimedLock::acquire(const std::string& name, const std::string& what,
                                  std::chrono::milliseconds max_wait, Mode mode) {
  const auto t0 = Clock::now();
  if (std::string why = prepare_dir(dir_); !why.empty())
    return TimedHold(TimedHold::State::unavailable, 0, why, nullptr);
  const auto until = max_wait == std::chrono::milliseconds::max() ? Clock::time_point::max() : t0 + max_wait;
  const std::string path = dir_ + "/" + name + ".lock", gate_path = dir_ + "/" + name + ".gate";
  const int gate = open_lock_file(gate_path);
  const int fd = gate < 0 ? -1 : open_lock_file(path);
  if (fd < 0) {
    const int e = errno;
    if (gate >= 0) ::close(gate);
    return TimedHold(TimedHold::State::unavailable, 0,
                     "cannot open " + (gate < 0 ? gate_path : path) + ": " + std::strerror(e), nullptr);
  }
  // Through the gate: held until this acquire holds the lock (or gives up), then closed.
  const bool got =
      lock_until(gate, LOCK_EX, until) && lock_until(fd, mode == Mode::shared ? LOCK_SH : LOCK_EX, until);
  const int e = errno;
  ::close(gate);
  if (!got) {
    ::close(fd);
    const bool busy = e == EWOULDBLOCK;
    return TimedHold(busy ? TimedHold::State::busy : TimedHold::State::unavailable, ms_since(t0),
                     busy ? "held by another process" : "flock " + path + ": " + std::strerror(e), nullptr);
  }
  const long long begin = monotonic_ns();
  const std::string kind = (mode == Mode::shared ? "shared:" : "timed:") + what;
  auto release = [fd, name, kind, begin] {
    log_interval(kind, name, ::getpid(), begin, monotonic_ns());
    ::close(fd);  // closing the last descriptor of the open file releases the flock
  };
  return TimedHold(TimedHold::State::held, ms_since(t0), "", std::move(release));
}

TimedLock& default_timed_lock() {
  static FlockTimedLock lock;
  return lock;
}

std::string timed_lock_name(const std::string& device, const std::string& pci_bus_id) {
  if (device.rfind("cuda", 0) != 0) return "cpu";
  std::string id = pci_bus_id.empty() ? "index-" + device.substr(device.find(':') + 1) : pci_bus_id;
  for (char& c : id) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == ':' || c == '-';
    if (!ok) c = '_';
  }
  return "cuda-" + id;
}

long long monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

void log_interval(const std::string& kind, const std::string& name, long long pid, long long begin_ns,
                  long long end_ns) {
  const char* path = std::getenv("KFORGE_TIMED_LOG");
  if (!path || !*path) return;
  const std::string line = kind + " " + name + " " + std::to_string(pid) + " " + std::to_string(begin_ns) +
                           " " + std::to_string(end_ns) + "\n";
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // One write of a short line with O_APPEND: lines of several processes never interleave.
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace kforge::backends
