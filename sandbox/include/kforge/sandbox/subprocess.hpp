// kforge/sandbox/subprocess.hpp — running compilers and runners as confined child processes
// (docs/judge.md).
//
// Every child: argv only (never a shell), its own process group, stdin from /dev/null
// (unless the caller asks for a pipe), a wall-clock timeout (SIGTERM to the group, a grace
// period, then SIGKILL to the group), stdout/stderr captured and capped (head and tail kept),
// an environment built from an allow-list, rlimits (CPU seconds, process count, file size,
// no core dumps), a working directory, and a private network namespace where the OS allows
// (unshare(CLONE_NEWUSER|CLONE_NEWNET); silently skipped where it is not permitted).
// The outcome is a closed set of values; only a broken configuration throws.
// run_async integrates with Boost.Asio: no thread blocks per child (each child's pipes and
// timers live on a strand of its own; its exit is noticed by polling waitid(WNOHANG|WNOWAIT)
// on a timer, so no SIGCHLD handler is installed — SIGCHLD must not be set to SIG_IGN).
// The calling thread of run_async/LineChild::start blocks only from fork() to the child's
// execve() (to learn exec failures). When the child exits, whatever is left of its process
// group (background grandchildren, possibly still holding the pipes) is SIGKILLed and
// reading stops after a short drain window. All calls are thread-safe with respect to each
// other; completion handlers run on the given io_context. No process-wide state (signal
// dispositions, environment) is changed; stdin data travels over a socket written with
// MSG_NOSIGNAL, so a child that closes its stdin never raises SIGPIPE in the parent.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::sandbox {

struct Limits {
  std::chrono::milliseconds wall{60'000};  ///< wall-clock limit; 0 = none (run/run_async)
  std::chrono::milliseconds grace{1'000};  ///< SIGTERM -> SIGKILL delay
  long cpu_seconds = 0;                    ///< RLIMIT_CPU (SIGXCPU, SIGKILL 1 s later); 0 = unlimited
  long max_processes = 0;                  ///< RLIMIT_NPROC; 0 = unchanged
  long max_file_bytes = 1L << 30;          ///< RLIMIT_FSIZE (bytes, SIGXFSZ); 0 = unlimited
  /// Per stream; the first and last halves are kept around a "... [N bytes truncated] ..."
  /// line (which may exceed the cap by its own length). 0 = keep everything.
  std::size_t output_cap_bytes = 1 << 20;
  /// LineChild only: a stdout line longer than this is returned in pieces of this many bytes,
  /// so a child that writes without newlines cannot grow the parent's memory. 0 = no limit
  /// (the runner's replies are lines of any length).
  std::size_t max_line_bytes = 0;
};

struct Spec {
  std::vector<std::string> argv;  ///< argv[0] is looked up on PATH if it has no '/'
  std::filesystem::path cwd;      ///< empty: inherit
  /// Variables copied from the parent's environment when set (the allow-list). The default
  /// list holds PATH, HOME, LANG, LC_ALL, TMPDIR, CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH and
  /// PYTHONPATH-style toolchain variables; never API keys or tokens. An entry ending in '*'
  /// matches a prefix ("LC_*"). Names that look like credentials (containing KEY, TOKEN,
  /// SECRET, PASSWORD, PASSWD or CREDENTIAL) are never copied, even when listed.
  std::vector<std::string> env_allow = default_env_allow();
  /// Set explicitly (after the allow-list; not filtered). argv[0] is looked up on the
  /// child's PATH (env_set's if given), defaulting to /usr/local/bin:/usr/bin:/bin.
  std::map<std::string, std::string> env_set;
  Limits limits;
  bool isolate_network = true;  ///< try a private network namespace
  /// Where the parent is root: a network namespace alone, not inside a user namespace, so that
  /// the child keeps root's ability to hand its own children another user (the judge, whose
  /// candidate hosts become "nobody"). Elsewhere a user namespace as usual.
  bool network_without_userns_as_root = false;
  /// Written to the child's stdin (a socket), then closed; empty: stdin is /dev/null.
  std::string stdin_data;

  static std::vector<std::string> default_env_allow();
};

enum class Status {
  exited,           ///< exit_code holds the status
  signalled,        ///< term_signal holds the signal
  timed_out,        ///< killed after the wall-clock limit
  failed_to_start,  ///< fork/exec failed; error says why ("nvcc: No such file or directory",
                    ///< "chdir /x: No such file or directory")
};

struct Result {
  Status status = Status::failed_to_start;
  int exit_code = -1;
  int term_signal = 0;
  std::string out;  ///< captured stdout (capped)
  std::string err;  ///< captured stderr (capped)
  bool out_truncated = false;
  bool err_truncated = false;
  std::string error;                  ///< for failed_to_start
  std::chrono::milliseconds wall{0};  ///< from spawn to the end of output draining

  bool ok() const { return status == Status::exited && exit_code == 0; }
};

const char* to_string(Status s);

/// Runs a child to completion on the calling thread (uses a private io_context).
Result run(const Spec& spec);

/// Starts a child; `done` is posted to `io` when it has finished and its output is drained.
void run_async(boost::asio::io_context& io, Spec spec, std::function<void(Result)> done);

}  // namespace kforge::sandbox

namespace kforge::sandbox {

/// A long-lived confined child speaking lines over stdin/stdout: the runner worker.
/// Same confinement as run() except the wall limit (the caller times each request).
/// stderr is drained while reading stdout and its tail kept. Not thread-safe: one owner, except
/// kill_group(), which any thread may call while the owner keeps the LineChild alive.
class LineChild {
 public:
  /// Starts the child; nullptr with *error set when it cannot start.
  static std::unique_ptr<LineChild> start(const Spec& spec, std::string* error);
  ~LineChild();  ///< kills the group if still running
  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;

  /// Writes line + '\n' to the child's stdin; false if the child is gone or closed its
  /// stdin. While the child's input buffer is full it waits, reading the child's stdout
  /// (kept for read_line) and stderr meanwhile; it blocks as long as a live child does
  /// not read.
  bool write_line(std::string_view line);
  /// One line from stdout (without '\n'), waiting at most `timeout`; std::nullopt on timeout
  /// or EOF (then alive() tells which). At EOF an unterminated last line is returned once.
  /// Lines are not capped unless the Spec's limits.max_line_bytes is set.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  bool alive();
  /// SIGTERM to the group, grace, SIGKILL; reaps and returns how it ended (out/err: tails).
  Result terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(500));
  /// Waits for the child to exit (meant for after EOF; blocks while it runs), reaps it and
  /// returns how it ended. Later calls (and terminate) return the same Result.
  Result wait();
  /// SIGKILL to the child's process group now, unless it was reaped already (never a reused
  /// pid); the owner's read_line then sees EOF and its terminate()/wait() reaps the child.
  /// Thread-safe: the one call that may come from another thread than the owner's.
  void kill_group();
  /// The last limits.output_cap_bytes of stderr read so far (a marker line if more came).
  std::string stderr_tail() const;
  int pid() const;

 private:
  LineChild() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge::sandbox
