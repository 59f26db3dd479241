// backends/judge/zygote.hpp — the judge's warm Triton candidate hosts (internal to
// kforge-runner; issue 21 §2, backends/triton/zygote.py).
//
// Zygotes owns the runner's Triton zygotes: per host command and device (in practice one per
// runner), a Python process started the way a Triton host is started (CandidateHost's
// spawn: allow-listed environment, empty read-only working directory, /dev/null, a log,
// nothing else open), which has imported torch and Triton without initialising CUDA and
// forks one host per candidate on request, and with each a spare for the next request (CUDA
// initialised on the device while the judge checks the candidate; handed the next host's
// descriptors instead of a fresh fork). It runs no candidate code and holds no candidate
// state; the descriptors of each host (its log, its channel, the exchange's) are passed to
// it over a SOCK_SEQPACKET socket that only this process holds, and the host it forks
// becomes this process's own child (this process is a child subreaper while it waits), so
// CandidateHost waits for it, freezes and kills it as one it spawned. A zygote that is dead,
// slow or refuses is killed and restarted at the next request; after three failures in a row
// the runner stops asking (CandidateHost then spawns every host, as without a zygote).
// Nothing here is the candidate's failure: a host that cannot be forked is spawned.
// Single-threaded, owned by the runner's Worker; the destructor kills and reaps every zygote.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace kforge::runner {

struct HostCommand;

class Zygotes {
 public:
  Zygotes() = default;
  ~Zygotes();
  Zygotes(const Zygotes&) = delete;
  Zygotes& operator=(const Zygotes&) = delete;

  /// Whether the runner's environment allows zygotes (KFORGE_TRITON_ZYGOTE is not "0").
  static bool enabled_by_environment();

  /// Forks a Triton host for `cmd` on `device`: `env` is the host's whole environment (a
  /// zygote is started with it, less the per-candidate KFORGE_TRITON_SCRATCH), `fds` its log,
  /// its channel and the exchange's descriptors, in that order. The caller has already written
  /// the host's command line on the channel (zygote.py's `read_spec`). Returns the pid, a
  /// child of this process, or -1 with *error set (start the host some other way).
  pid_t fork_host(const HostCommand& cmd, const std::vector<std::string>& env, int device,
                  const std::vector<int>& fds, std::string* error);
  /// Starts the zygote fork_host would use for `cmd`, `env` and `device`, without waiting for
  /// its warm-up (the first fork_host waits for it): the runner's `prewarm` request, so that
  /// torch and Triton are imported while the first candidates are still being built. False
  /// when it is running already or could not be spawned (the first fork_host tries again).
  bool prewarm(const HostCommand& cmd, const std::vector<std::string>& env, int device);
  /// A host forked by fork_host did not reach `ready`: counted as the zygote's failure.
  void host_failed() { ++failures_in_a_row_; }

 private:
  struct Zygote {
    pid_t pid = -1;
    int control = -1;  ///< SOCK_SEQPACKET: this end only
    int log_fd = -1;
    std::string workdir;
    bool ready = false;  ///< it said `ready` (its warm-up is done)
    /// The spare host it forked for the next request (this process's child; zygote.py
    /// fork_spare), -1 when none: killed and reaped when the zygote stops or does not use it.
    pid_t spare = -1;
  };
  static std::string key_of(const HostCommand& cmd, const std::vector<std::string>& env, int device);
  /// Spawns the zygote (not waiting for it); false with *error set.
  bool spawn(Zygote& z, const HostCommand& cmd, const std::vector<std::string>& env, int device,
             std::string* error);
  /// Waits for a spawned zygote's `ready`; false with *error set.
  bool await_ready(Zygote& z, std::string* error);
  static void stop(Zygote& z);
  static std::string log_tail(const Zygote& z);
  pid_t request_fork(Zygote& z, const std::vector<int>& fds, std::string* error);

  std::map<std::string, Zygote> zygotes_;  ///< by command, environment and device
  int failures_in_a_row_ = 0;
};

}  // namespace kforge::runner
