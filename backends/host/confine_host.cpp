// The candidate host's confinement, shared by kforge-host (host_main.cpp, profile_mode.cpp)
// and the Triton candidate host's libkforge_pyconfine.so (py_confine.cpp): the SIGSYS report,
// the policy of a confined candidate and the artifact's loading.
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "host.hpp"
#include "kforge/sandbox/confine.hpp"
#include "kforge/sandbox/sealed_copy.hpp"

namespace kforge::host {

// Reports the stopped syscall (and, for open/openat, the path it named) on the channel and
// exits. Only async-signal-safe calls.
void on_sigsys(int, siginfo_t* si, void* ctx) {
  char buf[320];
  int n = std::snprintf(buf, sizeof buf, "violation %d", si->si_syscall);
#if defined(__x86_64__)
  const greg_t* g = static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs;
  const char* path = si->si_syscall == SYS_openat ? reinterpret_cast<const char*>(g[REG_RSI])
                     : si->si_syscall == SYS_open ? reinterpret_cast<const char*>(g[REG_RDI])
                                                  : nullptr;
  if (path) {
    buf[n++] = ' ';
    for (int i = 0; path[i] && i < 256 && n < static_cast<int>(sizeof buf) - 2; ++i)
      buf[n++] = path[i] == '\n' ? ' ' : path[i];
  }
#else
  (void)ctx;
#endif
  buf[n++] = '\n';
  (void)!::write(kChannel, buf, static_cast<std::size_t>(n));
  ::_exit(kforge::sandbox::kViolationExit);
}

int elem_size(int dtype) {
  switch (dtype) {
    case KF_FLOAT32:
    case KF_INT32:
      return 4;
    case KF_FLOAT16:
    case KF_BFLOAT16:
    case KF_INT16:
      return 2;
    case KF_FLOAT64:
    case KF_INT64:
    case KF_COMPLEX64:
      return 8;
    case KF_COMPLEX128:
      return 16;
    default:
      return 1;
  }
}

bool runs_unprivileged_on(int device) {
  if (device < 0) return true;
  glob_t g{};
  bool ok = ::glob("/dev/nvidia*", 0, nullptr, &g) == 0;
  for (std::size_t i = 0; ok && i < g.gl_pathc; ++i) {
    struct stat st {};
    ok = ::stat(g.gl_pathv[i], &st) == 0 && (!S_ISCHR(st.st_mode) || (st.st_mode & 0006) == 0006);
  }
  ::globfree(&g);
  glob_t mig{};
  const bool mig_instances = ::glob("/proc/driver/nvidia/capabilities/gpu*/mig/gi*", 0, nullptr, &mig) == 0;
  ::globfree(&mig);
  return ok && !(mig_instances && ::access("/dev/nvidia-caps", F_OK) == 0);
}

std::string confine_host(int device, const std::string& scratch, bool allow_sockets, bool own_image) {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSYS, &sa, nullptr);
  const bool no_seccomp = std::getenv("KFORGE_HOST_NO_SECCOMP") != nullptr;  // tests of other layers
  kforge::sandbox::ConfinePolicy policy;
  policy.seccomp = !no_seccomp;
  if (device >= 0) policy.writable_paths = {"/dev/nvidia*", "/dev/nvidia-caps/*"};
  if (!scratch.empty()) policy.scratch_dirs = {scratch};
  policy.allow_sockets = allow_sockets;
  // Not root: the user "nobody" (a GPU host only where the device nodes let it keep its GPU;
  // the profile mode stays, for Nsight Compute's lock in its scratch directory). A scratch
  // directory is handed to that user (the Triton host's cache; its build helper is that user too).
  if (!allow_sockets && runs_unprivileged_on(device)) policy.run_as_uid = kUnprivilegedUid;
  if (own_image) policy.protected_ranges = {kforge::sandbox::own_image_range()};
  // Reads only where a host needs them, plus the paths a Triton host names (its sys.path, its
  // caches: KFORGE_HOST_READABLE, colon-separated, set by host.py itself before it confines).
  // (Not the profile mode, whose injected Nsight Compute library reads where it likes; the
  // profile decides nothing.)
  if (!allow_sockets) policy.readable_paths = kforge::sandbox::system_read_paths();
  if (!allow_sockets)
    for (auto& p : kforge::sandbox::absolute_paths_in(std::getenv("KFORGE_HOST_READABLE")))
      policy.readable_paths.push_back(std::move(p));
  return kforge::sandbox::confine_self(policy);
}

std::string confine_and_load(int artifact_fd, int device, const std::string& scratch, KfForward* fn) {
  // The profile mode's scratch directory comes with Nsight Compute's socket (ConfinePolicy).
  if (std::string e = confine_host(device, scratch, !scratch.empty(), true); !e.empty())
    return "confine " + e;
  // Before any of the candidate's code runs, the descriptor must open and map executable here:
  // a failure so far is kforge's or the environment's (infra), never the candidate's.
  const std::string self = "/proc/self/fd/" + std::to_string(artifact_fd);
  const int probe = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (probe < 0) return "infra cannot open the artifact's descriptor " + self + ": " + std::strerror(errno);
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, probe, 0);
  const int map_errno = errno;
  ::close(probe);
  if (page == MAP_FAILED)
    return "infra cannot map the artifact executable: " + std::string(std::strerror(map_errno));
  ::munmap(page, 4096);
  // From here the candidate's constructors run: what fails is the candidate's.
  void* h = ::dlopen(self.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return std::string("load cannot load the artifact: ") + ::dlerror();
  *fn = reinterpret_cast<KfForward>(::dlsym(h, "kf_forward"));
  if (!*fn) return "entry_point the artifact exports no kf_forward";
  return "";
}

std::string confine_and_load(const std::string& artifact, int device, const std::string& scratch,
                             KfForward* fn) {
  // Copied into a sealed memfd before confinement, as the judge does (the read limits then cover no
  // path of the artifact's, and the host may no longer reach its directory).
  const int src = ::open(artifact.c_str(), O_RDONLY | O_CLOEXEC);
  if (src < 0) return "infra cannot open the artifact " + artifact + ": " + std::strerror(errno);
  const sandbox::SealedCopy copy = sandbox::sealed_copy(src);
  ::close(src);
  if (!copy)
    return "infra cannot copy the artifact " + artifact + " (" + copy.step +
           "): " + std::strerror(copy.error);
  return confine_and_load(copy.fd, device, scratch, fn);
}

}  // namespace kforge::host
