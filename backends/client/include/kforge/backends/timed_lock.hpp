#pragma once
// kforge/backends/timed_lock.hpp — the per-device lock for timed work (issue 21 §3). Several
// runners may judge on one device (`--devices cuda:0,cuda:0`), and several kforge processes may
// share a host; their checks run side by side, but everything timed on a device runs while its
// lock is held, so no two timed phases on one device overlap: the bench of a candidate and of its
// reference, the runner's calibration of a timed window, its peak measurements, TritonBench's
// do_bench, and the ncu profile step.
//
// Untimed work on a device (a check: the candidate host's start and runs, the reference's runs)
// holds the same lock shared (Mode::shared): checks of several runners run side by side, but
// never while timed work holds it exclusively, so no other runner's kernels run inside a timed
// window (on an H200, three runners checking beside a bench stretched the reference's windows
// by 0.4 ms: 24-29 us a call read for a 1.8 us relu). Not covered: a zygote's spare host
// initialising CUDA after its check's reply (zygote.py; one context and one tiny kernel).
//
// The lock is a flock(2) on <dir>/<name>.lock, taken through a gate, <dir>/<name>.gate: every
// acquire takes the gate exclusively first, and an exclusive one keeps it until it holds the
// lock, so a waiting timed hold is not starved by checks that keep overlapping (flock(2) itself
// gives waiting exclusive holds no precedence). <dir> is $KFORGE_LOCK_DIR, else
// /run/kforge-locks where this process runs as root, else /tmp/kforge-locks-<uid>; it is created
// 0700 and is used only if it is a directory (not a link) owned by this user with no group or
// other access: another user could otherwise hold the lock or swap the file, and the lock would
// serialise nothing (acquire() then answers unavailable, with the reason). A candidate host
// cannot reach it: Landlock limits its reads (flock needs an open descriptor) to the system's
// directories and its own paths, it runs as nobody where the judge runs as root, and every
// descriptor of the lock is close-on-exec. A lock dies with its holder's descriptor, so a killed
// runner or kforge leaves nothing held.
//
// Names (timed_lock_name): "cuda-<PCI bus id>" as the driver names the GPU (the same in every
// process, whatever its CUDA_VISIBLE_DEVICES), "cpu" for the host: one lock per host, since
// timed cpu work shares the host's cores with every other cpu timing.
//
// With $KFORGE_TIMED_LOG set, every hold is appended to that file when it ends, one line
// "timed:<what> <name> <pid> <begin_ns> <end_ns>" (CLOCK_MONOTONIC, the same clock in every
// process), and log_interval() appends other intervals (the client's checks): the test hook of
// ctest eval_devices_timed_serialised.
//
// Ownership: a TimedHold owns its descriptor and releases the lock when released or destroyed.
// Thread-safety: FlockTimedLock is thread-safe (every acquire opens its own descriptor, so two
// threads of one process exclude each other too); a TimedHold belongs to one thread.
//
// POSIX and the standard library only: kforge-runner compiles this file in as it is.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace kforge::backends {

/// A held (or refused) device lock. Move-only; releases on destruction.
class TimedHold {
 public:
  enum class State { held, busy, unavailable };
  TimedHold() = default;
  TimedHold(State s, double waited_ms, std::string why, std::function<void()> release)
      : state_(s), waited_ms_(waited_ms), why_(std::move(why)), release_(std::move(release)) {}
  TimedHold(TimedHold&& o) noexcept { *this = std::move(o); }
  TimedHold& operator=(TimedHold&& o) noexcept;
  TimedHold(const TimedHold&) = delete;
  TimedHold& operator=(const TimedHold&) = delete;
  ~TimedHold() { release(); }

  void release();
  bool held() const { return state_ == State::held; }
  /// busy: another process held it past the wait allowed; unavailable: no usable lock here.
  State state() const { return state_; }
  double waited_ms() const { return waited_ms_; }  ///< time spent waiting for it
  const std::string& why() const { return why_; }  ///< unavailable: the reason

 private:
  State state_ = State::unavailable;
  double waited_ms_ = 0;
  std::string why_ = "no lock";
  std::function<void()> release_;
};

/// Takes a device's timed lock: the interface timed work goes through (a fake in tests).
class TimedLock {
 public:
  /// exclusive: timed work; shared: untimed work on the device, beside other shared holds.
  enum class Mode { exclusive, shared };
  virtual ~TimedLock() = default;
  /// Waits for `name` at most `max_wait` (nullopt-like: max() waits as long as it takes).
  /// `what` names the work in the test log ("bench", "calibrate", "ncu", "check", ...): an
  /// exclusive hold is logged as "timed:<what>", a shared one as "shared:<what>".
  virtual TimedHold acquire(const std::string& name, const std::string& what,
                            std::chrono::milliseconds max_wait = std::chrono::milliseconds::max(),
                            Mode mode = Mode::exclusive) = 0;
};

/// flock(2) on <dir>/<name>.lock (above).
class FlockTimedLock final : public TimedLock {
 public:
  explicit FlockTimedLock(std::string dir = default_dir()) : dir_(std::move(dir)) {}
  TimedHold acquire(const std::string& name, const std::string& what,
                    std::chrono::milliseconds max_wait = std::chrono::milliseconds::max(),
                    Mode mode = Mode::exclusive) override;
  const std::string& dir() const { return dir_; }

  /// $KFORGE_LOCK_DIR, else /run/kforge-locks (root), else /tmp/kforge-locks-<uid>.
  static std::string default_dir();
  /// Creates `dir` 0700 where missing; "" when it is usable, else why not.
  static std::string prepare_dir(const std::string& dir);

 private:
  std::string dir_;
};

/// The process-wide lock the judge and the client use (a FlockTimedLock on default_dir()).
TimedLock& default_timed_lock();

/// The lock's name for a device: "cpu", or "cuda-<bus id>" from the driver's PCI bus id
/// ("0000:19:00.0"; lower-cased; characters other than [0-9a-z.:-] become '_').
std::string timed_lock_name(const std::string& device, const std::string& pci_bus_id = "");

/// Nanoseconds on CLOCK_MONOTONIC (the log's clock).
long long monotonic_ns();
/// Appends "<kind> <name> <pid> <begin_ns> <end_ns>" to $KFORGE_TIMED_LOG, when set.
void log_interval(const std::string& kind, const std::string& name, long long pid, long long begin_ns,
                  long long end_ns);

}  // namespace kforge::backends
