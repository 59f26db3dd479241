// Tests of kforge::sandbox subprocess confinement (real child processes, real signals) and of
// sealed_copy (real memfds and seals).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "catch.hpp"
#include "kforge/sandbox/sealed_copy.hpp"
#include "kforge/sandbox/subprocess.hpp"

using namespace kforge::sandbox;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

Spec make_spec(std::vector<std::string> argv) {
  Spec s;
  s.argv = std::move(argv);
  s.limits.wall = 20s;
  return s;
}

fs::path fresh_dir(const std::string& tag) {
  std::random_device rd;
  auto p = fs::temp_directory_path() /
           ("kforge-sandbox-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// True when the process is gone or a zombie (killed, waiting for its new parent to reap it).
bool process_dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto rp = line.rfind(')');
  return rp == std::string::npos || (rp + 2 < line.size() && line[rp + 2] == 'Z');
}

bool wait_dead(pid_t pid, std::chrono::milliseconds within) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < within) {
    if (process_dead(pid)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return process_dead(pid);
}

}  // namespace

TEST_CASE("run reports exit codes and captures both streams", "[sandbox]") {
  auto r = run(make_spec({"sh", "-c", "echo out-text; echo err-text >&2; exit 3"}));
  REQUIRE(r.status == Status::exited);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(r.ok());
  CHECK(r.out == "out-text\n");
  CHECK(r.err == "err-text\n");
  CHECK_FALSE(r.out_truncated);

  auto ok = run(make_spec({"true"}));
  CHECK(ok.ok());
  CHECK(std::string(to_string(ok.status)) == "exited");
}

TEST_CASE("run passes argv verbatim, without a shell", "[sandbox]") {
  auto r = run(make_spec({"printf", "%s|", "a b", "$HOME", "*", ";echo x"}));
  REQUIRE(r.ok());
  CHECK(r.out == "a b|$HOME|*|;echo x|");
}

TEST_CASE("a child killed by a signal is reported as signalled", "[sandbox]") {
  auto r = run(make_spec({"sh", "-c", "kill -SEGV $$"}));
  REQUIRE(r.status == Status::signalled);
  CHECK(r.term_signal == SIGSEGV);
  CHECK(r.term_signal == 11);
}

TEST_CASE("wall-clock timeout kills the child quickly", "[sandbox]") {
  auto spec = make_spec({"sleep", "30"});
  spec.limits.wall = 300ms;
  spec.limits.grace = 500ms;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(spec);
  double s = seconds_since(t0);
  CHECK(r.status == Status::timed_out);
  CHECK(std::string(to_string(r.status)) == "timed_out");
  CHECK(s < 3.0);
  CHECK(s >= 0.29);
  CHECK(r.wall.count() >= 290);
}

TEST_CASE("a child ignoring SIGTERM is SIGKILLed after the grace period", "[sandbox]") {
  auto spec = make_spec({"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"});
  spec.limits.wall = 300ms;
  spec.limits.grace = 300ms;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(spec);
  double s = seconds_since(t0);
  CHECK(r.status == Status::timed_out);
  CHECK(r.out == "ready\n");
  CHECK(s >= 0.55);
  CHECK(s < 3.0);
}

TEST_CASE("grandchildren are killed with the process group", "[sandbox]") {
  SECTION("on timeout, while they hold the pipes") {
    auto spec = make_spec({"sh", "-c", "sleep 30 & echo $!; sleep 30"});
    spec.limits.wall = 300ms;
    spec.limits.grace = 200ms;
    auto t0 = std::chrono::steady_clock::now();
    auto r = run(spec);
    CHECK(seconds_since(t0) < 3.0);
    CHECK(r.status == Status::timed_out);
    pid_t grandchild = static_cast<pid_t>(std::stol(r.out));
    REQUIRE(grandchild > 1);
    CHECK(wait_dead(grandchild, 2000ms));
  }
  SECTION("when the child exits but a background grandchild keeps stdout open") {
    auto spec = make_spec({"sh", "-c", "sleep 30 & echo $!"});
    spec.limits.wall = 20s;
    auto t0 = std::chrono::steady_clock::now();
    auto r = run(spec);
    CHECK(seconds_since(t0) < 3.0);
    REQUIRE(r.status == Status::exited);
    CHECK(r.exit_code == 0);
    pid_t grandchild = static_cast<pid_t>(std::stol(r.out));
    REQUIRE(grandchild > 1);
    CHECK(wait_dead(grandchild, 2000ms));
  }
}

TEST_CASE("captured output is capped, keeping head and tail", "[sandbox]") {
  auto spec = make_spec({"sh", "-c",
                         "printf HEAD; head -c 200000 /dev/zero | tr '\\0' x; printf TAIL; "
                         "printf EHEAD >&2; head -c 50000 /dev/zero | tr '\\0' y >&2; printf ETAIL >&2"});
  spec.limits.output_cap_bytes = 1000;
  auto r = run(spec);
  REQUIRE(r.ok());
  CHECK(r.out_truncated);
  CHECK(r.err_truncated);
  CHECK(r.out.rfind("HEAD", 0) == 0);
  CHECK(r.out.size() >= 4);
  CHECK(r.out.substr(r.out.size() - 4) == "TAIL");
  CHECK(r.out.size() < 1100);
  CHECK(r.out.find("bytes truncated") != std::string::npos);
  CHECK(r.err.rfind("EHEAD", 0) == 0);
  CHECK(r.err.substr(r.err.size() - 5) == "ETAIL");
  CHECK(r.err.size() < 1100);

  // Exactly at the cap: nothing dropped.
  auto exact = make_spec({"sh", "-c", "head -c 1000 /dev/zero | tr '\\0' z"});
  exact.limits.output_cap_bytes = 1000;
  auto e = run(exact);
  CHECK_FALSE(e.out_truncated);
  CHECK(e.out == std::string(1000, 'z'));
}

TEST_CASE("the child environment is built from the allow-list only", "[sandbox]") {
  ::setenv("OPENAI_API_KEY", "sk-kforge-test-secret", 1);
  ::setenv("ANTHROPIC_API_KEY", "ant-kforge-test-secret", 1);
  ::setenv("HF_TOKEN", "hf-kforge-test-secret", 1);
  ::setenv("KFORGE_TEST_UNLISTED", "unlisted-value", 1);
  auto spec = make_spec({"env"});
  spec.env_set["KFORGE_EXPLICIT"] = "explicit-value";
  auto r = run(spec);
  REQUIRE(r.ok());
  CHECK(r.out.find("OPENAI_API_KEY") == std::string::npos);
  CHECK(r.out.find("ANTHROPIC_API_KEY") == std::string::npos);
  CHECK(r.out.find("HF_TOKEN") == std::string::npos);
  CHECK(r.out.find("kforge-test-secret") == std::string::npos);
  CHECK(r.out.find("KFORGE_TEST_UNLISTED") == std::string::npos);
  CHECK(r.out.find("KFORGE_EXPLICIT=explicit-value\n") != std::string::npos);
  if (const char* path = std::getenv("PATH"))
    CHECK(r.out.find(std::string("PATH=") + path + "\n") != std::string::npos);

  // Even an allow-list that names a secret does not pass it on; env_set is the explicit way.
  spec.env_allow.push_back("HF_TOKEN");
  spec.env_allow.push_back("KFORGE_TEST_*");
  auto r2 = run(spec);
  REQUIRE(r2.ok());
  CHECK(r2.out.find("HF_TOKEN") == std::string::npos);
  CHECK(r2.out.find("KFORGE_TEST_UNLISTED=unlisted-value\n") != std::string::npos);

  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv("ANTHROPIC_API_KEY");
  ::unsetenv("HF_TOKEN");
  ::unsetenv("KFORGE_TEST_UNLISTED");
}

TEST_CASE("a missing program or directory is failed_to_start with a reason", "[sandbox]") {
  auto r = run(make_spec({"kforge-no-such-program-xyz", "--version"}));
  CHECK(r.status == Status::failed_to_start);
  CHECK(r.error == "kforge-no-such-program-xyz: No such file or directory");

  auto r2 = run(make_spec({"/nonexistent/dir/nvcc"}));
  CHECK(r2.status == Status::failed_to_start);
  CHECK(r2.error == "/nonexistent/dir/nvcc: No such file or directory");

  auto spec = make_spec({"true"});
  spec.cwd = "/nonexistent/kforge-dir";
  auto r3 = run(spec);
  CHECK(r3.status == Status::failed_to_start);
  CHECK(r3.error.find("chdir /nonexistent/kforge-dir") != std::string::npos);

  auto r4 = run(make_spec({}));
  CHECK(r4.status == Status::failed_to_start);
  CHECK_FALSE(r4.error.empty());

  // A file that exists but is not executable.
  auto dir = fresh_dir("noexec");
  std::ofstream(dir / "tool") << "#!/bin/sh\necho hi\n";
  auto r5 = run(make_spec({(dir / "tool").string()}));
  CHECK(r5.status == Status::failed_to_start);
  CHECK(r5.error.find("Permission denied") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the child runs in the given working directory", "[sandbox]") {
  auto dir = fresh_dir("cwd");
  auto spec = make_spec({"pwd"});
  spec.cwd = dir;
  auto r = run(spec);
  REQUIRE(r.ok());
  CHECK(fs::equivalent(fs::path(r.out.substr(0, r.out.size() - 1)), dir));
  fs::remove_all(dir);
}

TEST_CASE("stdin is /dev/null by default, or the given data", "[sandbox]") {
  auto r = run(make_spec({"wc", "-c"}));
  REQUIRE(r.ok());
  CHECK(std::stol(r.out) == 0);

  auto spec = make_spec({"cat"});
  spec.stdin_data = "line one\nline two\n";
  auto r2 = run(spec);
  REQUIRE(r2.ok());
  CHECK(r2.out == "line one\nline two\n");

  // Larger than any pipe buffer: written asynchronously while output is read.
  auto big = make_spec({"wc", "-c"});
  big.stdin_data.assign(3 << 20, 'q');
  auto r3 = run(big);
  REQUIRE(r3.ok());
  CHECK(std::stol(r3.out) == (3 << 20));

  // A child that ignores its stdin must not hurt us (no SIGPIPE in the parent).
  auto deaf = make_spec({"true"});
  deaf.stdin_data.assign(1 << 20, 'q');
  CHECK(run(deaf).ok());
}

TEST_CASE("rlimits: file size and CPU time", "[sandbox]") {
  auto dir = fresh_dir("rlimit");
  auto spec = make_spec({"dd", "if=/dev/zero", "of=big.bin", "bs=65536", "count=32"});
  spec.cwd = dir;
  spec.limits.max_file_bytes = 100'000;
  auto r = run(spec);
  CHECK_FALSE(r.ok());
  CHECK(r.status == Status::signalled);
  CHECK(r.term_signal == SIGXFSZ);
  REQUIRE(fs::exists(dir / "big.bin"));
  CHECK(fs::file_size(dir / "big.bin") <= 100'000);

  auto ok = spec;
  ok.limits.max_file_bytes = 4 << 20;
  CHECK(run(ok).ok());
  CHECK(fs::file_size(dir / "big.bin") == 32u * 65536u);

  auto cpu = make_spec({"sh", "-c", "while :; do :; done"});
  cpu.limits.cpu_seconds = 1;
  cpu.limits.wall = 15s;
  auto t0 = std::chrono::steady_clock::now();
  auto rc = run(cpu);
  CHECK(rc.status == Status::signalled);
  CHECK((rc.term_signal == SIGXCPU || rc.term_signal == SIGKILL));
  CHECK(seconds_since(t0) < 10.0);

  auto core = make_spec({"sh", "-c", "ulimit -c"});
  auto rcore = run(core);
  REQUIRE(rcore.ok());
  CHECK(rcore.out == "0\n");
  fs::remove_all(dir);
}

TEST_CASE("network isolation is attempted and never prevents the run", "[sandbox]") {
  std::error_code ec;
  auto parent_ns = fs::read_symlink("/proc/self/ns/net", ec);
  REQUIRE_FALSE(ec);
  auto spec = make_spec({"readlink", "/proc/self/ns/net"});
  spec.isolate_network = false;
  auto shared = run(spec);
  REQUIRE(shared.ok());
  CHECK(shared.out == parent_ns.string() + "\n");

  spec.isolate_network = true;
  auto isolated = run(spec);
  REQUIRE(isolated.ok());  // where unshare is denied, the child still runs
  INFO("isolated child's namespace: " << isolated.out << " parent: " << parent_ns.string());
  // Identity is unchanged either way (our uid maps onto itself inside a user namespace).
  auto id = make_spec({"id", "-u"});
  auto rid = run(id);
  REQUIRE(rid.ok());
  CHECK(std::stol(rid.out) == static_cast<long>(::getuid()));
}

TEST_CASE("run_async runs children concurrently on one io_context", "[sandbox]") {
  boost::asio::io_context io;
  std::vector<Result> results;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    auto spec = make_spec({"sh", "-c", "sleep 0.6; echo done" + std::to_string(i)});
    run_async(io, spec, [&results](Result r) { results.push_back(std::move(r)); });
  }
  io.run();
  double s = seconds_since(t0);
  REQUIRE(results.size() == 3);
  std::vector<std::string> outs;
  for (const auto& r : results) {
    CHECK(r.ok());
    outs.push_back(r.out);
  }
  std::sort(outs.begin(), outs.end());
  CHECK(outs == std::vector<std::string>{"done0\n", "done1\n", "done2\n"});
  CHECK(s < 1.5);  // sequentially it would take 1.8 s
  CHECK(s >= 0.59);

  // A failure to start is also delivered through the io_context.
  boost::asio::io_context io2;
  bool called = false;
  run_async(io2, make_spec({"kforge-no-such-program-xyz"}), [&](Result r) {
    called = true;
    CHECK(r.status == Status::failed_to_start);
  });
  CHECK_FALSE(called);
  io2.run();
  CHECK(called);
}

TEST_CASE("run_async works with several threads running the io_context", "[sandbox]") {
  boost::asio::io_context io;
  std::mutex mu;
  int good = 0;
  for (int i = 0; i < 8; ++i) {
    auto spec = make_spec({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo E >&2"});
    run_async(io, spec, [&](Result r) {
      std::lock_guard<std::mutex> lock(mu);
      if (r.ok() && r.out == std::string(300000, 'a') && r.err == "E\n") ++good;
    });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back([&] { io.run(); });
  for (auto& t : threads) t.join();
  CHECK(good == 8);
}

TEST_CASE("LineChild round-trips lines and times out reads", "[sandbox]") {
  std::string error;
  auto child = LineChild::start(make_spec({"cat"}), &error);
  REQUIRE(child);
  CHECK(error.empty());
  CHECK(child->pid() > 0);
  CHECK(child->alive());

  REQUIRE(child->write_line("hello"));
  auto line = child->read_line(2000ms);
  REQUIRE(line.has_value());
  CHECK(*line == "hello");

  REQUIRE(child->write_line("{\"a\": 1}"));
  REQUIRE(child->write_line("second"));
  CHECK(child->read_line(2000ms).value_or("") == "{\"a\": 1}");
  CHECK(child->read_line(2000ms).value_or("") == "second");

  auto t0 = std::chrono::steady_clock::now();
  auto none = child->read_line(200ms);
  double s = seconds_since(t0);
  CHECK_FALSE(none.has_value());
  CHECK(s >= 0.19);
  CHECK(s < 1.5);
  CHECK(child->alive());

  // A line larger than the socket buffer goes through while the child echoes it back.
  std::string big(1 << 20, 'b');
  REQUIRE(child->write_line(big));
  CHECK(child->read_line(5000ms).value_or("") == big);

  auto r = child->terminate(500ms);
  CHECK(r.status == Status::signalled);
  CHECK(r.term_signal == SIGTERM);
  CHECK_FALSE(child->alive());
  CHECK_FALSE(child->write_line("after"));
}

TEST_CASE("LineChild reports EOF, exit status and the stderr tail", "[sandbox]") {
  std::string error;
  auto spec = make_spec({"sh", "-c", "read x; echo got:$x; echo oops >&2; exit 4"});
  auto child = LineChild::start(spec, &error);
  REQUIRE(child);
  REQUIRE(child->write_line("ping"));
  CHECK(child->read_line(2000ms).value_or("") == "got:ping");
  CHECK_FALSE(child->read_line(2000ms).has_value());  // EOF
  auto r = child->wait();
  CHECK(r.status == Status::exited);
  CHECK(r.exit_code == 4);
  CHECK(r.err == "oops\n");
  CHECK(child->stderr_tail() == "oops\n");
  CHECK_FALSE(child->alive());

  // A chatty stderr cannot block the child while we wait for stdout.
  auto noisy = make_spec({"sh", "-c", "head -c 500000 /dev/zero | tr '\\0' e >&2; echo END >&2; echo ready"});
  noisy.limits.output_cap_bytes = 100;
  auto c2 = LineChild::start(noisy, &error);
  REQUIRE(c2);
  CHECK(c2->read_line(5000ms).value_or("") == "ready");
  auto r2 = c2->wait();
  CHECK(r2.ok());
  auto tail = c2->stderr_tail();
  CHECK(tail.size() < 200);
  CHECK(tail.substr(tail.size() - 4) == "END\n");

  auto missing = LineChild::start(make_spec({"kforge-no-such-program-xyz"}), &error);
  CHECK_FALSE(missing);
  CHECK(error == "kforge-no-such-program-xyz: No such file or directory");
}

TEST_CASE("LineChild: max_line_bytes hands a line without newline out in pieces", "[sandbox]") {
  std::string error;
  auto spec = make_spec({"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' e; echo; echo next"});
  spec.limits.max_line_bytes = 4096;
  auto child = LineChild::start(spec, &error);
  REQUIRE(child);
  std::size_t pieces = 0, bytes = 0, longest = 0;
  std::string last;
  while (auto line = child->read_line(5000ms)) {
    ++pieces;
    bytes += line->size();
    longest = std::max(longest, line->size());
    last = *line;
  }
  CHECK(longest == 4096);
  CHECK(bytes == 1000000 + 4);  // the e's, the empty rest of their line, "next"
  CHECK(pieces >= 1000000 / 4096);
  CHECK(last == "next");
  CHECK(child->wait().ok());
  // A long line read whole at once (its newline already in the buffer) is split too.
  auto whole = make_spec({"sh", "-c", "head -c 10000 /dev/zero | tr '\\0' e; echo"});
  whole.limits.max_line_bytes = 4096;
  auto c2 = LineChild::start(whole, &error);
  REQUIRE(c2);
  std::this_thread::sleep_for(500ms);  // all of it written before the first read
  std::vector<std::size_t> sizes;
  while (auto line = c2->read_line(5000ms)) sizes.push_back(line->size());
  CHECK(sizes == std::vector<std::size_t>{4096, 4096, 1808});
  CHECK(c2->wait().ok());
}

TEST_CASE("LineChild kills its whole group when destroyed", "[sandbox]") {
  std::string error;
  auto child = LineChild::start(make_spec({"sh", "-c", "sleep 30 & echo $!; cat"}), &error);
  REQUIRE(child);
  auto line = child->read_line(2000ms);
  REQUIRE(line.has_value());
  pid_t grandchild = static_cast<pid_t>(std::stol(*line));
  pid_t pid = child->pid();
  CHECK_FALSE(process_dead(grandchild));
  child.reset();
  CHECK(wait_dead(grandchild, 2000ms));
  CHECK(wait_dead(pid, 2000ms));
}

namespace {
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()))) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}
}  // namespace

TEST_CASE("sealed_copy copies a file's bytes into a memfd sealed against every change", "[sealed_copy]") {
  const fs::path dir = fresh_dir("sealed");
  // Several reads' worth (the copy reads 64 KiB at a time), every byte value.
  std::string bytes(200'000, '\0');
  std::mt19937 rng(7);
  for (char& c : bytes) c = static_cast<char>(rng());
  { std::ofstream(dir / "artifact.so", std::ios::binary) << bytes; }
  const int src = ::open((dir / "artifact.so").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(src >= 0);
  const SealedCopy copy = sealed_copy(src);
  ::close(src);
  REQUIRE(copy);
  CHECK(copy.error == 0);
  CHECK(read_all(copy.fd) == bytes);
  const int seals = ::fcntl(copy.fd, F_GET_SEALS);
  CHECK(seals == (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL));
  CHECK((::fcntl(copy.fd, F_GETFD) & FD_CLOEXEC) != 0);
  // No change gets through: writes, growth, shrinking, removing a seal.
  errno = 0;
  CHECK(::pwrite(copy.fd, "x", 1, 0) == -1);
  CHECK(errno == EPERM);
  CHECK(::write(copy.fd, "x", 1) == -1);
  CHECK(::ftruncate(copy.fd, 10) == -1);
  CHECK(::ftruncate(copy.fd, static_cast<off_t>(bytes.size()) + 1) == -1);
  CHECK(::fcntl(copy.fd, F_ADD_SEALS, F_SEAL_WRITE) == -1);
  CHECK(read_all(copy.fd) == bytes);
  ::close(copy.fd);
  fs::remove_all(dir);
}

TEST_CASE("sealed_copy copies from a pipe whose writer delivers in pieces", "[sealed_copy]") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  const std::string bytes(300'000, 'k');
  bool wrote_all = true;
  std::thread writer([&] {
    for (std::size_t off = 0; off < bytes.size(); off += 1000) {
      const std::size_t n = std::min<std::size_t>(1000, bytes.size() - off);
      wrote_all = wrote_all && ::write(p[1], bytes.data() + off, n) == static_cast<ssize_t>(n);
    }
    ::close(p[1]);
  });
  const SealedCopy copy = sealed_copy(p[0], "kforge-test");
  writer.join();
  ::close(p[0]);
  CHECK(wrote_all);
  REQUIRE(copy);
  CHECK(read_all(copy.fd) == bytes);
  ::close(copy.fd);
}

TEST_CASE("sealed_copy returns the failed read as a value", "[sealed_copy]") {
  const fs::path dir = fresh_dir("sealed-dir");
  const int src = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(src >= 0);
  const SealedCopy copy = sealed_copy(src);  // read(2) of a directory: EISDIR
  ::close(src);
  CHECK_FALSE(copy);
  CHECK(copy.fd == -1);
  CHECK(std::string(copy.step) == "read");
  CHECK(copy.error == EISDIR);
  fs::remove_all(dir);
}
