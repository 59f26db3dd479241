// backends/host/line_channel.hpp — a candidate host's end of its channel to the judge:
// newline-terminated lines over one descriptor, read and written whole (not a public header).
// Shared by kforge-host (host_main.cpp) and the Triton host's libkforge_pyseal.so (py_seal.cpp),
// which link nothing of kforge: header-only. A LineChannel borrows its descriptor (never closes
// it) and buffers what it read past the last line; one thread at a time.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>

namespace kforge::host {

class LineChannel {
 public:
  explicit LineChannel(int fd) : fd_(fd) {}

  /// The next line, without its '\n' (blocking); false at the end of the stream or on a read
  /// error. Reads interrupted by a signal are retried.
  bool read_line(std::string* line) {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        *line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      char tmp[65536];
      const ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }

  /// Writes `s` and '\n' whole (one write where the descriptor takes it, partial writes
  /// completed, interrupted ones retried); false on a write error.
  bool write_line(std::string_view s) {
    std::string data;
    data.reserve(s.size() + 1);
    data.append(s).push_back('\n');
    for (std::size_t off = 0; off < data.size();) {
      const ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
  std::string buf_;  ///< bytes read past the last line returned
};

}  // namespace kforge::host
