#pragma once
// kforge/backends/profile_gate.hpp — the gate of a profile target started ahead of its turn
// (issue 41 §4; profile_step.hpp). The profile step starts each target under Nsight Compute
// before it holds the device's timed lock, so that the fixed cost of ncu, of the process and of
// its imports is paid beside other runners' work; each target waits at its gate, before its
// first CUDA call, until the step holds the lock and creates the gate file. Nothing of the
// target's GPU work can therefore overlap anything timed, and the candidate's code is loaded
// only after its gate opened.
//
// The gate is a file named by $KFORGE_PROFILE_GATE, outside every directory a target may write
// (a candidate host writes only beneath its own scratch directory), so a candidate cannot open
// the reference's gate. Unset: no gate (a target run by hand, or by an older profile step).
//
// Used by kforge-host --profile and kforge-runner --profile-reference; backends/triton/
// profile_host.py does the same in Python. POSIX and the standard library only, header-only:
// kforge-host links no kforge library. Thread-safety: stateless.
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kforge::backends {

/// The environment variable naming the gate file.
inline constexpr const char* kProfileGateEnv = "KFORGE_PROFILE_GATE";

/// The line a target prints on its stdout when it begins to wait at its gate (its start-up is
/// over): the profile step takes the device's timed lock only then (NcuLaunch::ready). The
/// target prints it before its candidate is loaded, so no candidate can print it in its place.
inline constexpr const char* kProfileGateReadyLine = "kforge: at the profile gate";

/// How long a target waits at its gate before it gives up (exit status 2): a profile step
/// that died (kill -9) leaves no process behind for longer than this.
inline constexpr std::chrono::seconds kProfileGateMaxWait{1800};

/// Prints kProfileGateReadyLine on `ready_fd` (the process's stdout as ncu gave it), then waits until the
/// gate file of $KFORGE_PROFILE_GATE exists, polling every 2 ms. true at once, printing nothing, when the
/// variable is unset or empty; false when the file did not appear within `max_wait`.
inline bool wait_for_profile_gate(int ready_fd = 1,
                                  std::chrono::milliseconds max_wait = kProfileGateMaxWait) {
  const char* gate = std::getenv(kProfileGateEnv);
  if (gate == nullptr || *gate == '\0') return true;
  std::fflush(stdout);
  const std::string line = std::string(kProfileGateReadyLine) + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(ready_fd, line.data() + done, line.size() - done);
    if (n <= 0) break;  // no reader: the step then finds the run ended, or waits out its limit
    done += static_cast<std::size_t>(n);
  }
  const auto until = std::chrono::steady_clock::now() + max_wait;
  struct stat st {};
  while (::stat(gate, &st) != 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    const timespec two_ms{0, 2'000'000};
    ::nanosleep(&two_ms, nullptr);
  }
  return true;
}

}  // namespace kforge::backends
