#include "kforge/common/beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kforge/common/task_id.hpp"

namespace kforge {

namespace fs = std::filesystem;

namespace {

/// An owned descriptor.
struct Dirfd {
  int fd = -1;
  explicit Dirfd(int f = -1) : fd(f) {}
  Dirfd(const Dirfd&) = delete;
  Dirfd& operator=(const Dirfd&) = delete;
  Dirfd(Dirfd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Dirfd& operator=(Dirfd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Dirfd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const fs::path& root, const fs::path& rel, const std::string& what, int err) {
  throw std::runtime_error((root / rel).string() + ": " + what +
                           (err ? ": " + std::string(std::strerror(err)) : "") + " (writing beneath " +
                           root.string() + ")");
}

/// rel's components, checked like a task id's (common/task_id.hpp).
std::vector<std::string> components(const fs::path& rel) {
  const std::string s = rel.generic_string();
  if (auto p = task_id_problem(s))
    throw std::invalid_argument("path '" + s.substr(0, 200) + "' below an output directory " + *p);
  std::vector<std::string> out;
  for (const auto& c : rel) out.push_back(c.string());
  return out;
}

/// Opens `name`, one component without '/', relative to `dir`, never through a symbolic link.
/// -1 with errno set on failure (ELOOP or ENOTDIR for a symbolic link).
int open_component(int dir, const std::string& name, int flags, mode_t mode = 0) {
  static std::atomic<bool> no_openat2{false};
  if (!no_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC | O_NOFOLLOW);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dir, name.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS) return static_cast<int>(fd);
    no_openat2.store(true, std::memory_order_relaxed);
  }
  return ::openat(dir, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, mode);
}

Dirfd open_root(const fs::path& root) {
  Dirfd d(::open(root.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  if (d.fd < 0) fail(root, "", "cannot open the output directory", errno);
  return d;
}

/// Walks the folders of `parts` (all but the last) below `root`, creating missing ones when
/// `create`; an invalid descriptor when one is missing and !create.
Dirfd walk(const fs::path& root, const fs::path& rel, const std::vector<std::string>& parts, std::size_t n,
           bool create) {
  Dirfd cur = open_root(root);
  for (std::size_t i = 0; i < n; ++i) {
    int fd = open_component(cur.fd, parts[i], O_DIRECTORY | O_RDONLY);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(cur.fd, parts[i].c_str(), 0777) != 0 && errno != EEXIST)
        fail(root, rel, "cannot create the folder '" + parts[i] + "'", errno);
      fd = open_component(cur.fd, parts[i], O_DIRECTORY | O_RDONLY);
    }
    if (fd < 0) {
      if (errno == ENOENT && !create) return Dirfd();
      if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)
        fail(root, rel, "'" + parts[i] + "' is a symbolic link or not a folder: refused", 0);
      fail(root, rel, "cannot open the folder '" + parts[i] + "'", errno);
    }
    cur = Dirfd(fd);
  }
  return cur;
}

void write_all(int fd, std::string_view data, const fs::path& root, const fs::path& rel) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(root, rel, "write failed", errno);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

void create_directories_beneath(const fs::path& root, const fs::path& rel) {
  const auto parts = components(rel);
  walk(root, rel, parts, parts.size(), true);
}

void write_file_beneath(const fs::path& root, const fs::path& rel, std::string_view data) {
  const auto parts = components(rel);
  Dirfd dir = walk(root, rel, parts, parts.size() - 1, true);
  static std::atomic<unsigned long> counter{0};
  const std::string tmp =
      "." + parts.back() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    Dirfd f(open_component(dir.fd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0666));
    if (f.fd < 0) fail(root, rel, "cannot create a temporary file", errno);
    try {
      write_all(f.fd, data, root, rel);
    } catch (...) {
      ::unlinkat(dir.fd, tmp.c_str(), 0);
      throw;
    }
  }
  // renameat replaces a symbolic link at the destination itself, never its target.
  if (::renameat(dir.fd, tmp.c_str(), dir.fd, parts.back().c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    fail(root, rel, "cannot rename the temporary file into place", err);
  }
}

bool remove_file_beneath(const fs::path& root, const fs::path& rel) {
  const auto parts = components(rel);
  Dirfd dir = walk(root, rel, parts, parts.size() - 1, false);
  if (dir.fd < 0) return false;
  if (::unlinkat(dir.fd, parts.back().c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  fail(root, rel, "cannot remove", errno);
}

}  // namespace kforge
