#include "kforge/sandbox/confine.hpp"

#include <fcntl.h>
#include <grp.h>
#include <glob.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <initializer_list>
#include <vector>

#ifdef KFORGE_HAVE_SECCOMP
#include <seccomp.h>
#endif

namespace kforge::sandbox {

namespace {

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

/// Drops every capability (bounding, ambient, effective, permitted, inheritable): a root
/// host keeps uid 0 but loses CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_SYS_ADMIN, ...
std::string drop_capabilities() {
  int last = 63;
  if (std::ifstream f("/proc/sys/kernel/cap_last_cap"); f) f >> last;
  for (int c = 0; c <= last; ++c) ::prctl(PR_CAPBSET_DROP, c, 0, 0, 0);  // EPERM without CAP_SETPCAP: fine
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct hdr{};
  hdr.version = _LINUX_CAPABILITY_VERSION_3;
  hdr.pid = 0;
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capset, &hdr, data) != 0) return errno_text("capset", errno);
  return "";
}

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

/// Landlock (the kernel's path-based access control, Linux >= 5.13): from here on no file may
/// be opened for writing, created, removed, renamed or truncated, except the paths matching
/// `writable` (the GPU's device nodes, which the driver reopens read-write when it maps
/// memory). Returns the ABI version in force, or 0 where Landlock is missing or refused (the
/// caller then stops every open for writing with seccomp instead: closed either way).
int landlock_restrict(const std::vector<std::string>& writable, const std::vector<std::string>& scratch,
                      const std::vector<std::string>& readable) {
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return 0;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                           LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                           LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                           LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                           LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  constexpr __u64 kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  if (!readable.empty()) attr.handled_access_fs |= kRead;
  const int rs = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (rs < 0) return 0;  // unusable here: the seccomp filter then stops every open for writing
  auto allow = [rs](const std::string& pattern, __u64 access) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) {
        int fd = ::open(g.gl_pathv[i], O_PATH | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        landlock_path_beneath_attr pb{};
        // A file (not a directory) takes only the rights of files: others make the rule invalid.
        constexpr __u64 kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                      LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
        pb.allowed_access = ::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode) ? access & kFileRights : access;
        pb.parent_fd = fd;
        ::syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
        ::close(fd);
      }
    ::globfree(&g);
  };
  for (const auto& pattern : readable) allow(pattern, kRead);
  for (const auto& pattern : writable) allow(pattern, LANDLOCK_ACCESS_FS_WRITE_FILE | (readable.empty() ? 0 : kRead));
  for (const auto& dir : scratch) allow(dir, attr.handled_access_fs);  // everything, beneath it only
  const long rc = ::syscall(SYS_landlock_restrict_self, rs, 0);
  ::close(rs);
  return rc == 0 ? static_cast<int>(abi) : 0;  // not restricted: the seccomp filter covers writes
}

/// Root becomes policy.run_as_uid (user and group; no supplementary groups), after handing it
/// the scratch directories; where it cannot (root of a user namespace that maps no other user,
/// EPERM) it stays root without capabilities. The kernel clears the parent-death signal and the dumpable flag on a
/// change of credentials: both are set again.
std::string become_unprivileged(const ConfinePolicy& p) {
  if (p.run_as_uid == 0 || ::geteuid() != 0) return "";
  const auto id = static_cast<uid_t>(p.run_as_uid);
  for (const auto& dir : p.scratch_dirs)
    if (!dir.empty() && ::chown(dir.c_str(), id, id) != 0) return errno_text("chown of the scratch directory", errno);
  // Other processes out of sight where the kernel lets root mount: a mount namespace of its own
  // whose /proc shows only this user's processes (the judge's are root's).
  if (::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
      ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0)
    ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2");
  // Root of a user namespace that maps no other user (a judge started inside one) cannot
  // change users: it stays, without capabilities, as before.
  if (::setgroups(0, nullptr) != 0) return errno == EPERM || errno == EINVAL ? "" : errno_text("setgroups", errno);
  if (::setresgid(id, id, id) != 0) return errno_text("setresgid", errno);
  if (::setresuid(id, id, id) != 0) return errno_text("setresuid", errno);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (::getppid() == 1) return "the judge is gone";
  return "";
}

std::string set_limits(const ConfinePolicy& p) {
  struct Lim {
    int res;
    rlim_t v;
    const char* name;
  };
  for (const Lim& l : {Lim{RLIMIT_FSIZE, static_cast<rlim_t>(p.max_file_bytes), "RLIMIT_FSIZE"},
                       Lim{RLIMIT_CORE, 0, "RLIMIT_CORE"},
                       Lim{RLIMIT_NOFILE, static_cast<rlim_t>(p.max_open_files), "RLIMIT_NOFILE"}}) {
    rlimit cur{};
    ::getrlimit(l.res, &cur);
    rlimit r{std::min(l.v, cur.rlim_max), std::min(l.v, cur.rlim_max)};
    if (::setrlimit(l.res, &r) != 0) return errno_text(l.name, errno);
  }
  return "";
}

#ifdef KFORGE_HAVE_SECCOMP
// Syscalls the host never needs once the candidate is loaded, grouped by what they would
// reach. Names the running kernel's libseccomp does not know are skipped.
constexpr const char* kTrapped[] = {
    // new processes and programs (clone without CLONE_THREAD is handled below)
    "fork", "vfork", "execve", "execveat",
    // network and local sockets
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    // other processes' memory and signals
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    "pidfd_send_signal", "kill", "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "move_pages",
    "migrate_pages", "process_madvise", "process_mrelease",
    // the file system (opens are handled below)
    "creat", "link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "mkdir", "mkdirat", "rmdir", "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "fchmodat2",
    "chown", "fchown", "lchown", "fchownat", "truncate", "ftruncate", "fallocate", "utime", "utimes",
    "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
    "fremovexattr", "name_to_handle_at", "open_by_handle_at", "fanotify_init", "mount", "umount2",
    "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "move_mount", "open_tree", "fspick",
    "mount_setattr", "swapon", "swapoff", "quotactl", "acct",
    // state that outlives the process (a later candidate could read it)
    "shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
    "semctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "keyctl", "add_key", "request_key",
    // the kernel and the machine
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "unshare", "setns", "personality", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "sethostname", "setdomainname", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "syslog", "vhangup", "iopl", "ioperm"};

std::string seccomp_error(const char* what, int rc) {
  return std::string(what) + ": " + std::strerror(-rc);
}

/// Calls a scratch directory needs (ConfinePolicy::scratch_dirs; Nsight Compute's lock takes a
/// symlink): Landlock confines them to it (timestamps, which it does not confine, decide nothing).
constexpr const char* kScratchAllowed[] = {
    "creat",   "unlink",    "unlinkat", "rename", "renameat", "renameat2", "mkdir",     "mkdirat",  "rmdir",
    "symlink", "symlinkat", "link",     "linkat", "utime",    "utimes",    "utimensat", "futimesat"};
/// Answered EPERM instead of trapped when there is a scratch directory (Landlock does not
/// confine permission changes; Nsight Compute's injected library tries them and carries on).
/// The socket calls, allowed only with ConfinePolicy::allow_sockets.
constexpr const char* kSocketCalls[] = {"socket", "socketpair", "connect", "bind",
                                        "listen", "accept",     "accept4"};
constexpr const char* kScratchRefused[] = {"chmod", "fchmod", "fchmodat", "fchmodat2",
                                           "chown", "fchown", "lchown",   "fchownat"};

bool listed(const char* name, const char* const* b, const char* const* e) {
  return std::any_of(b, e, [name](const char* x) { return std::strcmp(x, name) == 0; });
}

/// Signals to other processes through file ownership: fcntl F_SETOWN / F_SETSIG / F_SETOWN_EX
/// and the FIOSETOWN / SIOCSPGRP ioctls name a process to receive SIGIO / SIGURG.
std::string trap_owner_signals(scmp_filter_ctx ctx) {
  int rc;
  for (scmp_datum_t cmd : {scmp_datum_t{F_SETOWN}, scmp_datum_t{F_SETSIG}, scmp_datum_t{F_SETOWN_EX}})
    if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(fcntl), 1, SCMP_A1(SCMP_CMP_EQ, cmd))) < 0)
      return seccomp_error("fcntl", rc);
  for (scmp_datum_t req : {scmp_datum_t{0x8901}, scmp_datum_t{0x8902}})  // FIOSETOWN, SIOCSPGRP
    if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(ioctl), 1,
                                 SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, req))) < 0)
      return seccomp_error("ioctl", rc);
  return "";
}

/// [lo, hi) as aligned power-of-two blocks {base, size} (a filter compares one argument once per
/// rule, so a range is a set of masked equalities: (addr & ~(size - 1)) == base).
std::vector<std::pair<unsigned long, unsigned long>> aligned_blocks(unsigned long lo, unsigned long hi) {
  std::vector<std::pair<unsigned long, unsigned long>> blocks;
  while (lo < hi) {
    unsigned long size = lo == 0 ? (1UL << 47) : (lo & (~lo + 1));  // the largest alignment of lo
    while (size > hi - lo) size >>= 1;
    blocks.emplace_back(lo, size);
    lo += size;
  }
  return blocks;
}

/// The memory calls that could rewrite a protected range (ConfinePolicy::protected_ranges): any
/// whose address lies inside is trapped; mremap answers ENOMEM whatever its arguments (glibc's
/// realloc then copies instead; an in-place growth could otherwise fill the unmapped gap below a
/// range, and a move could land inside it).
std::string trap_protected(scmp_filter_ctx ctx, const std::vector<std::pair<unsigned long, unsigned long>>& ranges) {
  int rc;
  bool any = false;
  for (const auto& [lo, hi] : ranges)
    for (const auto& [base, size] : aligned_blocks(lo & ~0xfffUL, hi)) {
      any = true;
      for (const char* name : {"mprotect", "pkey_mprotect", "munmap", "madvise", "mmap", "remap_file_pages"}) {
        const int nr = ::seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) continue;
        if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 1, SCMP_A0(SCMP_CMP_MASKED_EQ, ~(size - 1), base))) < 0)
          return seccomp_error(name, rc);
      }
    }
  if (!any) return "";
  if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOMEM), SCMP_SYS(mremap), 0)) < 0)
    return seccomp_error("mremap", rc);
  // MAP_FIXED replaces whatever it covers from its address on: one that starts below a range
  // must not reach into it. It may not start within kFixedReach below a range, nor be longer.
  constexpr unsigned long kFixedReach = 1UL << 36;  // 64 GiB
  const auto fixed = static_cast<scmp_datum_t>(MAP_FIXED);
  if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mmap), 2, SCMP_A3(SCMP_CMP_MASKED_EQ, fixed, fixed),
                               SCMP_A1(SCMP_CMP_GE, kFixedReach))) < 0)
    return seccomp_error("mmap", rc);
  for (const auto& [lo, hi] : ranges) {
    const unsigned long from = lo > kFixedReach + (1UL << 16) ? (lo - kFixedReach) & ~0xfffUL : (1UL << 16);
    for (const auto& [base, size] : aligned_blocks(from, lo & ~0xfffUL))
      if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(mmap), 2, SCMP_A3(SCMP_CMP_MASKED_EQ, fixed, fixed),
                                   SCMP_A0(SCMP_CMP_MASKED_EQ, ~(size - 1), base))) < 0)
        return seccomp_error("mmap", rc);
  }
  return "";
}

std::string install_filter(bool trap_write_opens, bool scratch, bool landlock_truncate, bool sockets,
                           const std::vector<std::pair<unsigned long, unsigned long>>& ranges) {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return "seccomp_init failed";
  struct Guard {
    scmp_filter_ctx c;
    ~Guard() { ::seccomp_release(c); }
  } guard{ctx};
  int rc = ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc < 0) return seccomp_error("seccomp_attr_set(TSYNC)", rc);
  const uint32_t trap = SCMP_ACT_TRAP;
  for (const char* name : kTrapped) {
    int nr = ::seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;
    if (scratch && listed(name, std::begin(kScratchAllowed), std::end(kScratchAllowed))) continue;
    if (sockets && listed(name, std::begin(kSocketCalls), std::end(kSocketCalls))) continue;
    const uint32_t action = scratch && listed(name, std::begin(kScratchRefused), std::end(kScratchRefused))
                                ? SCMP_ACT_ERRNO(EPERM)
                                : trap;
    if ((rc = ::seccomp_rule_add(ctx, action, nr, 0)) < 0 && rc != -EDOM) return seccomp_error(name, rc);
  }
  // Threads yes, processes no: clone must carry CLONE_THREAD; clone3 (whose flags sit in
  // memory a filter cannot read) answers ENOSYS, so glibc falls back to clone.
  if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0))) <
      0)
    return seccomp_error("clone", rc);
  if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
    return seccomp_error("clone3", rc);
  // Opens: never creating or truncating; for writing only where Landlock is not there to
  // confine writes to the allowed paths. openat2's flags are in memory: ENOSYS (glibc never
  // needs it).
  // With a scratch directory Landlock confines creation; O_TRUNC stays trapped where Landlock
  // does not confine truncation (ABI < 3: O_RDONLY|O_TRUNC would truncate any file).
  int bits[4], n_bits = 0;
  if (!scratch) bits[n_bits++] = O_CREAT;
  if (!scratch || !landlock_truncate) bits[n_bits++] = O_TRUNC;
  if (trap_write_opens) {
    bits[n_bits++] = O_WRONLY;
    bits[n_bits++] = O_RDWR;
  }
  for (int i = 0; i < n_bits; ++i) {
    const int bit = bits[i];
    const auto b = static_cast<scmp_datum_t>(bit);
    if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, b, b))) < 0)
      return seccomp_error("openat", rc);
    if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, b, b))) < 0)
      return seccomp_error("open", rc);
  }
  if ((rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0)) < 0)
    return seccomp_error("openat2", rc);
  // Signals to itself only (raise, abort, pthread_kill use tgkill with its own pid).
  const auto self = static_cast<scmp_datum_t>(::getpid());
  if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self))) < 0)
    return seccomp_error("tgkill", rc);
  // The SIGSYS handler is the host's: a candidate that installs its own (to make every trapped
  // call quietly fail and carry on unreported) is itself stopped.
  if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(rt_sigaction), 2, SCMP_A0(SCMP_CMP_EQ, SIGSYS),
                               SCMP_A1(SCMP_CMP_NE, 0))) < 0)
    return seccomp_error("rt_sigaction", rc);
  // Limits of itself only (glibc's setrlimit is prlimit64(0, ...)).
  if ((rc = ::seccomp_rule_add(ctx, trap, SCMP_SYS(prlimit64), 1, SCMP_A0(SCMP_CMP_NE, 0))) < 0)
    return seccomp_error("prlimit64", rc);
  if (std::string e = trap_owner_signals(ctx); !e.empty()) return e;
  if (std::string e = trap_protected(ctx, ranges); !e.empty()) return e;
  if ((rc = ::seccomp_load(ctx)) < 0) return seccomp_error("seccomp_load", rc);
  return "";
}
#endif

}  // namespace

bool seccomp_available() {
#ifdef KFORGE_HAVE_SECCOMP
  return true;
#else
  return false;
#endif
}

std::string confine_self(const ConfinePolicy& policy) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno_text("PR_SET_NO_NEW_PRIVS", errno);
  if (std::string e = set_limits(policy); !e.empty()) return e;
  if (std::string e = become_unprivileged(policy); !e.empty()) return e;
  if (std::string e = drop_capabilities(); !e.empty()) return e;
  const int landlock = landlock_restrict(policy.writable_paths, policy.scratch_dirs, policy.readable_paths);
  if (!policy.readable_paths.empty() && landlock < 1)
    return "limiting reads needs Landlock (Linux >= 5.13)";
  if (!policy.scratch_dirs.empty() && landlock < 1)
    return "a scratch directory needs Landlock (Linux >= 5.13) to confine it";
  if (!policy.seccomp) return "";
#ifdef KFORGE_HAVE_SECCOMP
  return install_filter(landlock == 0, !policy.scratch_dirs.empty(), landlock >= 3, policy.allow_sockets,
                        policy.protected_ranges);
#else
  return "this build has no libseccomp: the candidate host cannot be confined";
#endif
}

std::vector<std::string> system_read_paths() {
  std::vector<std::string> paths{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
                                 "/etc", "/opt", "/dev", "/sys", "/proc"};
  // The directories of every file mapped now (libraries found through RPATH or a venv).
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    const auto last = line.rfind('/');
    if (slash == std::string::npos || last <= slash) continue;
    std::string dir = line.substr(slash, last - slash);
    if (std::find(paths.begin(), paths.end(), dir) == paths.end()) paths.push_back(dir);
  }
  // Where the dynamic loader looks for an artifact's libraries.
  for (auto& p : absolute_paths_in(std::getenv("LD_LIBRARY_PATH"))) paths.push_back(std::move(p));
  return paths;
}

std::vector<std::string> absolute_paths_in(const char* list) {
  std::vector<std::string> paths;
  const std::string all = list ? list : "";
  for (std::size_t a = 0, b; a < all.size(); a = b + 1) {
    b = all.find(':', a);
    if (b == std::string::npos) b = all.size();
    if (b > a && all[a] == '/') paths.push_back(all.substr(a, b - a));
  }
  return paths;
}

std::pair<unsigned long, unsigned long> own_image_range() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {0, 0};
  exe[n] = 0;
  std::ifstream maps("/proc/self/maps");
  unsigned long below = 0, lo = 0, hi = 0;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &a, &b) != 2) continue;
    const auto slash = line.find('/');
    const bool mine = slash != std::string::npos && line.compare(slash, std::string::npos, exe) == 0;
    if (mine) {
      if (lo == 0) lo = a;
      hi = b;
    } else if (lo == 0) {
      below = b;
    }
  }
  if (lo == 0) return {0, 0};
  // One unmapped page below the image is enough (no call may map it, and an mprotect from
  // further below would span the hole and fail); none where a mapping adjoins the image.
  constexpr unsigned long kPage = 4096, kLowest = 1UL << 16;
  const unsigned long from = lo >= kLowest + kPage && lo - kPage >= below ? lo - kPage : lo;
  return {from, hi};
}

std::string syscall_name(int nr) {
#ifdef KFORGE_HAVE_SECCOMP
  if (char* n = ::seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr)) {
    std::string s(n);
    std::free(n);
    return s;
  }
#endif
  return "syscall " + std::to_string(nr);
}

}  // namespace kforge::sandbox
