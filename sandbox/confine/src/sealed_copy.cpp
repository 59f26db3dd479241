// A descriptor's bytes in a sealed memfd (sealed_copy.hpp).
#include "kforge/sandbox/sealed_copy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace kforge::sandbox {

namespace {

/// MFD_EXEC (Linux 6.3) where the headers lack it; older kernels reject the flag with EINVAL
/// and map any memfd executable.
#ifdef MFD_EXEC
constexpr unsigned kMfdExec = MFD_EXEC;
#else
constexpr unsigned kMfdExec = 0x0010U;
#endif

int new_memfd(const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | kMfdExec);
  if (fd >= 0 || errno != EINVAL) return fd;
  return ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

/// Writes all of buf[0, n) to fd; false with errno set on an error.
bool write_all(int fd, const char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    buf += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

SealedCopy failed(int fd, const char* step) {
  const int err = errno;
  if (fd >= 0) ::close(fd);
  return SealedCopy{-1, err, step};
}

}  // namespace

SealedCopy sealed_copy(int src, const char* name) {
  const int fd = new_memfd(name);
  if (fd < 0) return failed(-1, "memfd_create");
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(src, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed(fd, "read");
    if (!write_all(fd, buf, static_cast<std::size_t>(n))) return failed(fd, "write");
  }
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return failed(fd, "seal");
  return SealedCopy{fd, 0, ""};
}

}  // namespace kforge::sandbox
