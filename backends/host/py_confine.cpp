// libkforge_pyconfine.so: the confinement of the Triton candidate host (backends/triton/host.py),
// which calls it through ctypes before it imports the candidate. The same policy as kforge-host
// (confine_host.cpp): no new privileges, no capabilities, the seccomp filter, Landlock. A C ABI
// of two functions; nothing else of kforge is reachable through it.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string>

#include "host.hpp"
#include "kforge/sandbox/confine.hpp"

extern "C" {

/// Before anything else: killed with the judge, not dumpable (no other process of this user
/// reads its memory). 0 on success, 1 when the judge is already gone.
__attribute__((visibility("default"))) int kf_py_prepare() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return ::getppid() == 1 ? 1 : 0;
}

/// Confines the calling process for a candidate on `device` (-1: cpu); `scratch` (may be
/// empty) is the one directory it may create files beneath (Triton's cache on a GPU). Installs
/// the SIGSYS report on descriptor 3. 0 on success, else 1 with the reason in err[0..err_len).
__attribute__((visibility("default"))) int kf_py_confine(int device, const char* scratch, char* err,
                                                         std::size_t err_len) {
  const std::string e = kforge::host::confine_host(device, scratch ? scratch : "", false, false);
  if (e.empty()) return 0;
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", e.c_str());
  return 1;
}

/// The Triton host's profile mode (backends/triton/profile_host.py): kf_py_confine with what
/// Nsight Compute's injected library needs, as kforge-host's profile mode has it
/// (confine_and_load with a scratch directory): the socket calls stay open and reads are not
/// limited; files may be created beneath `scratch` alone. Only a process that the profile step
/// runs under ncu calls this: nothing it does decides a verdict.
__attribute__((visibility("default"))) int kf_py_confine_profile(int device, const char* scratch, char* err,
                                                                 std::size_t err_len) {
  const std::string e = kforge::host::confine_host(device, scratch ? scratch : "", true, false);
  if (e.empty()) return 0;
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", e.c_str());
  return 1;
}

/// The Triton host's build helper (forked before the candidate is imported): it runs the C
/// compiler on the launcher sources Triton generates, so it may start processes, but it writes
/// nowhere but beneath `scratch` (and /dev/null), gains no privilege and holds no capability;
/// it is the user its host is: on `device`, nobody where runs_unprivileged_on says so, except
/// for the profile mode's host (`profile_host` 1), which stays root for Nsight Compute's socket
/// (confine_host). Files one writes in the scratch directory the other reads and extends: a
/// helper of another user would take the directory from a host without capabilities.
__attribute__((visibility("default"))) int kf_py_confine_builder(int device, int profile_host, const char* scratch,
                                                                 char* err, std::size_t err_len) {
  kforge::sandbox::ConfinePolicy policy;
  policy.seccomp = false;
  if (!profile_host && kforge::host::runs_unprivileged_on(device)) policy.run_as_uid = kforge::host::kUnprivilegedUid;
  policy.scratch_dirs = {scratch ? scratch : ""};
  policy.writable_paths = {"/dev/null"};
  const std::string e = kforge::sandbox::confine_self(policy);
  if (e.empty()) return 0;
  if (err && err_len > 0) std::snprintf(err, err_len, "%s", e.c_str());
  return 1;
}
}
