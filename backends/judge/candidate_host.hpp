// backends/judge/candidate_host.hpp — the judge's handle on one kforge-host process
// (internal to kforge-runner; docs/judge.md).
//
// CandidateHost starts backends/host/kforge-host for one artifact with nothing but its
// channel (a socketpair), a capped log (a memfd on stdout/stderr) and the Exchange's host
// memory; speaks its line protocol with timeouts; freezes it (SIGSTOP) while the judge reads
// shared memory, so a thread the candidate left running cannot finish late unseen; and turns
// its death into an attempt failure. The destructor kills and reaps it, so when a
// CandidateHost is gone nothing of the candidate runs any more (its CUDA context is destroyed
// with the process). Single-threaded, owned by the runner's Worker.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kforge::runner {

class Zygotes;

/// A failure of the candidate, as an attempt outcome.
struct HostFailure {
  std::string outcome;  ///< "runtime_error", "timeout", "forbidden_api", "format_error"
  std::string sub_kind;
  std::string message;
};

/// How a candidate host is started, per artifact kind (the runner's candidate loaders): argv is
/// `prefix..., <artifact>, <device>, <first fd to close>, suffix...`; `env` is added to the
/// host's allow-listed environment.
struct HostCommand {
  std::vector<std::string> prefix;  ///< {kforge-host} or {python3, -I, -B, host.py}
  std::vector<std::string> suffix;  ///< the Triton host: {libkforge_pyconfine.so}
  std::vector<std::string> env;     ///< "NAME=value"
  std::string cwd;                  ///< the host's working directory ("": the judge's)
  /// The host signs its replies: after `ready` the judge sends `key <128-bit hex>` and takes
  /// only lines that start with the key (the Triton host's native loop, libkforge_pyseal.so,
  /// where the candidate's Python cannot read it); a line the candidate writes on the channel
  /// itself is dropped. kforge-host's candidate is native code in its process: it is not keyed.
  bool keyed = false;
  /// The runner's Triton zygotes (zygote.hpp), when the host may be forked warm from one
  /// instead of spawned (null: spawned). A host that cannot be forked is spawned.
  Zygotes* zygotes = nullptr;
};

/// The host's whole environment for `cmd`: an allow-list of the runner's (no LD_PRELOAD, no
/// credentials, no Python paths) except the names cmd.env sets, then cmd.env.
std::vector<std::string> host_environment(const HostCommand& cmd);

/// A copy of the artifact at `path` in a memfd sealed against every change (F_SEAL_WRITE,
/// F_SEAL_GROW, F_SEAL_SHRINK, F_SEAL_SEAL), read by the judge: the descriptor the host gets in
/// place of a path, so that it depends on no directory's mode or owner and loads exactly these
/// bytes. -1 with *error set when the judge cannot read the file (kforge's failure, never the
/// candidate's).
int sealed_artifact(const std::string& path, std::string* error);

/// `p` joined with the working directory when it is relative (symlinks kept: a venv's python
/// must stay itself).
std::string absolute_path(const std::string& p);

/// posix_spawn as every candidate-side process starts: /dev/null on 0, `log_fd` on 1 and 2,
/// `fds` on 3, 4, ...; no other descriptor; every signal's default action, none blocked;
/// `cwd` ("": this process's). The pid, or -1 with *error set.
pid_t spawn_confined(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     const std::string& cwd, int log_fd, const std::vector<int>& fds, std::string* error);

class CandidateHost {
 public:
  /// Starts `cmd` for `artifact` on `device` (-1: cpu; else the CUDA ordinal) with the
  /// descriptors `fds` (numbered 4, 5, ... in the host), then the artifact's sealed copy
  /// (sealed_artifact) as the last descriptor, just below argv's "first fd to close": forked from the
  /// runner's zygote where cmd.zygotes is set (and spawned when that fails before the host is ready), else
  /// spawned. Returns null with *error set when the process cannot be started, or is not ready by `ready_by`
  /// (the request's deadline; a host that hangs in its start-up, as a spare host whose CUDA descriptors were
  /// closed did, is then the judge's failure within the request, never the client's timeout): the judge's
  /// failure, not the candidate's.
  static std::unique_ptr<CandidateHost> start(const HostCommand& cmd, const std::string& artifact, int device,
                                              const std::vector<int>& fds, std::string* error,
                                              std::chrono::steady_clock::time_point ready_by);
  ~CandidateHost();
  CandidateHost(const CandidateHost&) = delete;
  CandidateHost& operator=(const CandidateHost&) = delete;

  /// Sends one line and waits for the reply line (the first that starts with `expect`: lines
  /// the candidate wrote on the channel itself are skipped; on a keyed host, lines without the
  /// key are dropped before that). On death or timeout the host is
  /// reaped and *failure says how (a timeout kills it first). With `freeze_on_reply` the host
  /// is stopped (every thread, SIGSTOP) the moment its reply is read, before anything else:
  /// the candidate decides nothing after its "done" (work it deferred cannot run until the
  /// judge resumes it, and the judge resumes it only inside a timed window or a checked one).
  /// replied_at() is when the reply was read (before the freeze).
  std::optional<std::string> request(const std::string& line, std::chrono::milliseconds timeout,
                                     HostFailure* failure, const std::string& expect = "",
                                     bool freeze_on_reply = false);
  std::chrono::steady_clock::time_point replied_at() const { return replied_at_; }
  /// The number of threads the host has now (/proc/<pid>/task), -1 when it cannot be read.
  int thread_count() const;
  /// Whether a file whose path contains `needle` is mapped in the host (/proc/<pid>/maps).
  bool maps_file(const std::string& needle) const;
  /// Sends many lines and reads as many replies; the first reply that is not "ok" is returned
  /// in *bad (setup of the exchange). False on death/timeout.
  bool pipeline(const std::vector<std::string>& lines, std::chrono::milliseconds timeout, std::string* bad,
                HostFailure* failure);
  /// SIGSTOP and wait until every thread is stopped; resume() continues it. last_freeze_us()
  /// is how long the last freeze waited (us): diagnostics.
  void freeze();
  double last_freeze_us() const { return last_freeze_us_; }
  void resume();
  /// Kills (SIGKILL) and reaps the process; idempotent.
  void kill();
  bool alive() const { return pid_ > 0; }
  /// Whether the host was forked warm from the runner's zygote (else spawned).
  bool forked() const { return forked_; }
  /// The last bytes the candidate wrote to stdout/stderr.
  std::string log_tail(std::size_t max_bytes = 2000) const;

 private:
  CandidateHost() = default;
  /// One try: forked from cmd.zygotes when `forked`, else spawned.
  static std::unique_ptr<CandidateHost> launch(const HostCommand& cmd, const std::string& artifact,
                                               int device, const std::vector<int>& fds, bool forked,
                                               std::string* error,
                                               std::chrono::steady_clock::time_point ready_by);
  std::optional<std::string> read_line(std::chrono::milliseconds timeout, HostFailure* failure);
  HostFailure reap(const std::string& context);
  bool send_key(std::string* error);

  pid_t pid_ = -1;
  int channel_ = -1;
  int log_fd_ = -1;
  bool frozen_ = false;
  double last_freeze_us_ = 0;
  bool forked_ = false;
  std::chrono::steady_clock::time_point replied_at_{};
  std::string buf_;
  std::string violation_;  ///< from a "violation <nr>" line
  std::string key_;        ///< a keyed host's reply prefix ("<hex> "); empty: not keyed
};

}  // namespace kforge::runner
