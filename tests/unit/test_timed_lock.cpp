// The per-device lock for timed work (backends/timed_lock.hpp, issue 21 §3): holders of one
// device never overlap, other devices do, checks hold it shared (never inside timed work), a busy lock is
// answered within the wait asked for, a killed holder leaves nothing held, the descriptor is close-on-exec, a
// directory another user could reach is refused, and the judge never benches on a host calibrated outside its
// hold.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "kforge/agent/judge_setup.hpp"
#include "kforge/backends/evaluate.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/backends/timed_lock.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/util.hpp"
#include "scratch_dir.hpp"

using namespace kforge::backends;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

/// How many threads were inside the timed phase at once, at most, with `names[i]` per thread.
int max_inside(FlockTimedLock& lock, const std::vector<std::string>& names, int rounds) {
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> ts;
  for (const auto& name : names)
    ts.emplace_back([&, name] {
      for (int r = 0; r < rounds; ++r) {
        TimedHold h = lock.acquire(name, "test");
        REQUIRE(h.held());
        const int now = ++inside;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        std::this_thread::sleep_for(milliseconds(2));
        --inside;
      }
    });
  for (auto& t : ts) t.join();
  return most.load();
}

}  // namespace

TEST_CASE("timed lock: holders of one device never overlap; other devices do", "[timed_lock]") {
  const fs::path dir = scratch("timed-lock-overlap") / "locks";
  FlockTimedLock lock(dir.string());
  CHECK(max_inside(lock, {"cuda-a", "cuda-a", "cuda-a", "cuda-a"}, 15) == 1);
  // Two devices: a second holder gets the other lock at once while the first is held.
  TimedHold a = lock.acquire("cuda-a", "test");
  TimedHold b = lock.acquire("cuda-b", "test", milliseconds(0));
  CHECK(a.held());
  CHECK(b.held());
  CHECK((fs::status(dir).permissions() & fs::perms::all) == fs::perms::owner_all);  // created 0700
}

TEST_CASE("timed lock: a busy lock is answered within the wait asked for, and freed on release",
          "[timed_lock]") {
  FlockTimedLock lock((scratch("timed-lock-busy") / "locks").string());
  TimedHold first = lock.acquire("cpu", "test");
  REQUIRE(first.held());
  TimedHold second = lock.acquire("cpu", "test", milliseconds(30));
  CHECK(second.state() == TimedHold::State::busy);
  CHECK(second.waited_ms() >= 29);
  first.release();
  TimedHold third = lock.acquire("cpu", "test", milliseconds(0));
  CHECK(third.held());
  // A waiter blocks until the holder lets go, and its wait is what it waited.
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(40));
    third.release();
  });
  TimedHold fourth = lock.acquire("cpu", "test");
  t.join();
  CHECK(fourth.held());
  CHECK(fourth.waited_ms() >= 30);
}

TEST_CASE(
    "timed lock: checks hold it shared, side by side but never inside timed work; a timed hold "
    "waiting is not starved by checks",
    "[timed_lock]") {
  FlockTimedLock lock((scratch("timed-lock-shared") / "locks").string());
  const auto shared = TimedLock::Mode::shared;
  TimedHold check1 = lock.acquire("cuda-a", "check", milliseconds(0), shared);
  TimedHold check2 = lock.acquire("cuda-a", "check", milliseconds(0), shared);
  CHECK(check1.held());
  CHECK(check2.held());  // two runners' checks at once
  CHECK(lock.acquire("cuda-a", "bench", milliseconds(20)).state() == TimedHold::State::busy);
  CHECK(lock.acquire("cuda-b", "bench", milliseconds(0)).held());  // another GPU
  // A bench waits for the checks in flight; a check that comes after it waits for the bench,
  // though a check still holds the lock shared (flock alone would let it in).
  std::atomic<bool> bench_held{false};
  std::thread bench([&] {
    TimedHold b = lock.acquire("cuda-a", "bench");
    CHECK(b.held());
    bench_held = true;
    std::this_thread::sleep_for(milliseconds(60));
  });
  std::this_thread::sleep_for(milliseconds(30));  // the bench is waiting now
  CHECK_FALSE(bench_held);
  CHECK(lock.acquire("cuda-a", "check", milliseconds(20), shared).state() == TimedHold::State::busy);
  check1.release();
  check2.release();
  TimedHold after = lock.acquire("cuda-a", "check", milliseconds::max(), shared);  // waits out the bench
  CHECK(after.held());
  CHECK(bench_held);
  CHECK(after.waited_ms() >= 30);
  bench.join();
  // And timed work waits for a check, exactly as for another timed hold.
  CHECK(lock.acquire("cuda-a", "bench", milliseconds(20)).state() == TimedHold::State::busy);
  after.release();
  CHECK(lock.acquire("cuda-a", "bench", milliseconds(0)).held());
}

TEST_CASE("timed lock: another process's hold excludes, and dies with it", "[timed_lock]") {
  const std::string dir = (scratch("timed-lock-fork") / "locks").string();
  int go[2], held[2];
  REQUIRE(::pipe(go) == 0);
  REQUIRE(::pipe(held) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    FlockTimedLock lock(dir);
    TimedHold h = lock.acquire("cuda-0000:19:00.0", "test");
    char c = h.held() ? 'y' : 'n';
    (void)!::write(held[1], &c, 1);
    (void)!::read(go[0], &c, 1);
    ::_exit(0);  // never released: the descriptor closes with the process
  }
  char c = 0;
  REQUIRE(::read(held[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  FlockTimedLock lock(dir);
  CHECK(lock.acquire("cuda-0000:19:00.0", "test", milliseconds(20)).state() == TimedHold::State::busy);
  CHECK(lock.acquire("cuda-0000:3b:00.0", "test", milliseconds(0)).held());  // another GPU
  (void)!::write(go[1], "x", 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(lock.acquire("cuda-0000:19:00.0", "test", milliseconds(0)).held());
  for (int fd : {go[0], go[1], held[0], held[1]}) ::close(fd);
}

TEST_CASE("timed lock: the descriptor is close-on-exec (no candidate host inherits it)", "[timed_lock]") {
  const fs::path dir = scratch("timed-lock-cloexec") / "locks";
  FlockTimedLock lock(dir.string());
  TimedHold h = lock.acquire("cpu", "test");
  REQUIRE(h.held());
  int found = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (fs::read_symlink(e.path(), ec) != dir / "cpu.lock") continue;
    ++found;
    CHECK((::fcntl(std::stoi(e.path().filename().string()), F_GETFD) & FD_CLOEXEC) != 0);
  }
  CHECK(found == 1);
}

TEST_CASE("timed lock: a directory others can reach, or a link, is refused", "[timed_lock]") {
  const fs::path root = scratch("timed-lock-dirs");
  const fs::path open_dir = root / "open";
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  TimedHold h = FlockTimedLock(open_dir.string()).acquire("cpu", "test");
  CHECK(h.state() == TimedHold::State::unavailable);
  CHECK(h.why().find("mode must be 0700") != std::string::npos);
  fs::create_directories(root / "real");
  fs::permissions(root / "real", fs::perms::owner_all);
  fs::create_directory_symlink(root / "real", root / "link");
  CHECK(FlockTimedLock((root / "link").string()).acquire("cpu", "test").state() ==
        TimedHold::State::unavailable);
  CHECK(FlockTimedLock("relative/dir").acquire("cpu", "test").state() == TimedHold::State::unavailable);
  if (::geteuid() == 0) {  // another owner (root can make one)
    const fs::path theirs = root / "theirs";
    fs::create_directories(theirs);
    fs::permissions(theirs, fs::perms::owner_all);
    REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
    TimedHold t = FlockTimedLock(theirs.string()).acquire("cpu", "test");
    CHECK(t.state() == TimedHold::State::unavailable);
    CHECK(t.why().find("belongs to uid 65534") != std::string::npos);
  }
}

TEST_CASE("timed lock: names from the device, never a path", "[timed_lock]") {
  CHECK(timed_lock_name("cpu") == "cpu");
  CHECK(timed_lock_name("cuda:3", "0000:19:00.0") == "cuda-0000:19:00.0");
  CHECK(timed_lock_name("cuda:0", "0000:AB:00.0") == "cuda-0000:ab:00.0");
  CHECK(timed_lock_name("cuda:2") == "cuda-index-2");  // no bus id known: by the index
  const std::string odd = timed_lock_name("cuda:0", "../../etc/x y");
  CHECK(odd.find('/') == std::string::npos);
  CHECK(odd.find(' ') == std::string::npos);
}

TEST_CASE("timed lock: holds are logged to KFORGE_TIMED_LOG with the monotonic clock", "[timed_lock]") {
  const fs::path root = scratch("timed-lock-log");
  const fs::path log = root / "log";
  ::setenv("KFORGE_TIMED_LOG", log.c_str(), 1);
  const long long before = monotonic_ns();
  {
    FlockTimedLock lock((root / "locks").string());
    TimedHold h = lock.acquire("cpu", "bench");
    std::this_thread::sleep_for(milliseconds(5));
  }
  log_interval("check", "cpu", 42, 1, 2);
  ::unsetenv("KFORGE_TIMED_LOG");
  std::ifstream f(log);
  std::string kind, name;
  long long pid = 0, b = 0, e = 0;
  REQUIRE(f >> kind >> name >> pid >> b >> e);
  CHECK(kind == "timed:bench");
  CHECK(name == "cpu");
  CHECK(pid == ::getpid());
  CHECK(b >= before);
  CHECK(e - b >= 5'000'000);
  REQUIRE(f >> kind >> name >> pid >> b >> e);
  CHECK(kind == "check");
  CHECK(pid == 42);
}

TEST_CASE("timed lock: a check waits for another's timed work; its bench calibrates a host of its own",
          "[runner][timed_lock]") {
  // The runner's lock directory (its environment) and the client's (RunnerConfig): one place.
  const fs::path root = scratch("timed-lock-runner");
  const std::string dir = (root / "locks").string();
  ::setenv("KFORGE_LOCK_DIR", dir.c_str(), 1);
  FlockTimedLock lock(dir);
  const fs::path adv = fs::path(KFORGE_TESTS_DIR) / "data/adversarial";
  auto parsed = kforge::parse_task_file(adv / "task.py", "adversarial/relu2_add");
  REQUIRE(parsed.task);
  const auto task = kforge::agent::task_ref(*parsed.task, "");
  RunnerConfig rc;
  rc.timed_lock = &lock;
  RunnerClient runner(rc);
  kforge::backends::EvalOptions opt;
  opt.bench = false;
  opt.compile.cache_dir = fs::path(KFORGE_BUILD_DIR) / "test-compile-cache";
  const auto& cpu = get_backend("cpu");
  auto ev = evaluate(cpu, kforge::read_file(adv / "correct/kernel.cpp"), root / "correct", runner, task, opt);
  REQUIRE(ev.outcome == kforge::Outcome::pass);
  const auto artifact = ev.compile.artifact;
  BenchOptions bo;
  bo.reps = 3;
  bo.min_reps = 2;
  auto fresh_host = [](const BenchResult& b) {
    return b.phases_ms.count("host_start_ms") + b.phases_ms.count("host_fork_ms") > 0;
  };

  // Alone: the check holds the lock shared and does not calibrate; its bench starts a host of
  // its own and calibrates it under the bench's hold.
  auto c = runner.check(task, artifact, 1, 7, HostKind::native);
  REQUIRE(c.outcome == kforge::Outcome::pass);
  CHECK(c.phases_ms.count("calibrate_ms") == 0);
  CHECK(c.phases_ms.count("device_lock_wait_ms") == 1);  // the client's wait for its shared hold
  auto b = runner.bench(task, artifact, bo, HostKind::native);
  REQUIRE(b.ok);
  CHECK(fresh_host(b));
  CHECK(b.phases_ms.count("calibrate_ms") == 1);

  // Another process's timed work holds the device: the check waits for it (outside its
  // request's timeout), and so does the bench.
  TimedHold other = lock.acquire("cpu", "test");
  REQUIRE(other.held());
  std::thread release([&] {
    std::this_thread::sleep_for(milliseconds(300));
    other.release();
  });
  c = runner.check(task, artifact, 1, 8, HostKind::native);
  release.join();
  REQUIRE(c.outcome == kforge::Outcome::pass);
  CHECK(c.phases_ms["device_lock_wait_ms"] >= 250);
  other = lock.acquire("cpu", "test");
  REQUIRE(other.held());
  std::thread release2([&] {
    std::this_thread::sleep_for(milliseconds(300));
    other.release();
  });
  b = runner.bench(task, artifact, bo, HostKind::native);
  release2.join();
  REQUIRE(b.ok);
  CHECK(fresh_host(b));
  CHECK(b.phases_ms.count("calibrate_ms") == 1);
  CHECK(b.phases_ms["device_lock_wait_ms"] >= 250);  // the bench waited for the holder
  CHECK(b.bench_ms >= b.phases_ms["device_lock_wait_ms"]);

  // Where the client has no usable lock (a relative directory is refused), the check's judge
  // calibrates under the runner's own lock, and the bench reuses that host.
  {
    FlockTimedLock none("relative/dir");
    RunnerConfig none_rc;
    none_rc.timed_lock = &none;
    RunnerClient no_share(none_rc);
    c = no_share.check(task, artifact, 1, 9, HostKind::native);
    REQUIRE(c.outcome == kforge::Outcome::pass);
    CHECK(c.phases_ms.count("calibrate_ms") == 1);
    b = no_share.bench(task, artifact, bo, HostKind::native);
    REQUIRE(b.ok);
    CHECK_FALSE(fresh_host(b));
  }

  // No usable lock (a relative directory is refused): the bench's flags say so, beside the
  // judge's own.
  FlockTimedLock unusable("relative/dir");
  RunnerConfig unlocked_rc;
  unlocked_rc.timed_lock = &unusable;
  RunnerClient unlocked(unlocked_rc);
  b = unlocked.bench(task, artifact, bo, HostKind::native);
  REQUIRE(b.ok);
  CHECK(std::any_of(b.flags.begin(), b.flags.end(), [](const std::string& f) {
    return f.find("not serialised with other timed work on the device") != std::string::npos;
  }));
  ::unsetenv("KFORGE_LOCK_DIR");
}

TEST_CASE("timed lock: a GPU's lock is named by its PCI bus id, the same for every runner on it", "[.gpu]") {
  RunnerConfig rc;
  rc.device = "cuda:0";
  RunnerClient a(rc), b(rc);
  const std::string name = a.timed_lock_name();
  INFO(name);
  CHECK(name.rfind("cuda-", 0) == 0);
  CHECK(name.find("index") == std::string::npos);  // the driver's bus id, not the index
  CHECK(name.find(':') != std::string::npos);      // domain:bus:device.function
  CHECK(b.timed_lock_name() == name);
}
