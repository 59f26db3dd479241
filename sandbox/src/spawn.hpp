// sandbox/src/spawn.hpp — internal: fork+exec of one confined child, shared by run_async and
// LineChild. Not a public header.
//
// spawn() does all allocation before fork(); the child runs only async-signal-safe calls
// (it may be forked from a multithreaded process). Parent-side fds are O_CLOEXEC.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kforge/sandbox/subprocess.hpp"

namespace kforge::sandbox::detail {

struct Spawned {
  pid_t pid = -1;   ///< also the process-group id
  int in_fd = -1;   ///< parent end of the child's stdin (a socket; send with MSG_NOSIGNAL)
  int out_fd = -1;  ///< parent read end of the child's stdout
  int err_fd = -1;  ///< parent read end of the child's stderr
};

/// Starts the child. stdin_pipe: give the child a stdin channel (in_fd) instead of /dev/null.
/// Returns false with *error set ("nvcc: No such file or directory", "chdir /x: ...") when
/// the child could not be started; no process is left behind then.
bool spawn(const Spec& spec, bool stdin_pipe, Spawned* out, std::string* error);

/// The child's environment: allow-listed parent variables (secret-looking names dropped),
/// then env_set. "NAME=value" strings.
std::vector<std::string> build_env(const Spec& spec);

/// True for names that look like credentials (API keys, tokens, secrets, passwords).
bool looks_secret(const std::string& name);

/// Fills status/exit_code/term_signal from a waitpid status word.
void decode_wait_status(int wstatus, Result* r);

/// Captures one stream keeping the first cap/2 and the last cap - cap/2 bytes.
/// cap == 0 keeps everything.
class OutputCap {
 public:
  explicit OutputCap(std::size_t cap) : cap_(cap) {}
  void add(const char* p, std::size_t n);
  /// The kept text; a marker line stands where bytes were dropped.
  std::string text(bool* truncated) const;
  std::size_t total() const { return total_; }

 private:
  std::size_t cap_;
  std::size_t total_ = 0;
  std::string head_;
  std::string tail_;
};

/// Keeps only the last `cap` bytes of a stream (cap == 0: everything).
class TailBuffer {
 public:
  explicit TailBuffer(std::size_t cap) : cap_(cap) {}
  void add(const char* p, std::size_t n);
  std::string text() const;

 private:
  std::size_t cap_;
  std::size_t dropped_ = 0;
  std::string buf_;
};

}  // namespace kforge::sandbox::detail
