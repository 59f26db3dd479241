// tests/unit/scripted_server.hpp — test support: child processes and the local scripted
// chat-completions server (tests/tools/kforge-scripted-llm) on a loopback port.
//
// spawn() forks and execs argv (stdout to out_fd when >= 0, stderr to /dev/null) and returns
// the pid. ScriptedServer starts kforge-scripted-llm on port 0 with a script (and, optionally,
// a request log), waits up to 10 s for its "listening on 127.0.0.1:<port>" line, and stops it
// (SIGTERM, reaped) when destroyed. Single-threaded test helpers; no sharing between threads.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"

namespace kforge::test {

inline pid_t spawn(const std::vector<std::string>& args, int out_fd) {
  pid_t pid = fork();
  if (pid == 0) {
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

class ScriptedServer {
 public:
  explicit ScriptedServer(const std::filesystem::path& script, const std::filesystem::path& log = {}) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    std::vector<std::string> args{std::string(KFORGE_BUILD_DIR) + "/tests/kforge-scripted-llm", "--port", "0",
                                  "--script", script.string()};
    if (!log.empty()) args.insert(args.end(), {"--log", log.string()});
    pid_ = spawn(args, fds[1]);
    close(fds[1]);
    std::string line;
    pollfd p{fds[0], POLLIN, 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    const std::string prefix = "listening on 127.0.0.1:";
    REQUIRE(line.rfind(prefix, 0) == 0);
    url_ = "http://127.0.0.1:" + std::to_string(std::stoi(line.substr(prefix.size())));
  }
  ~ScriptedServer() {
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  std::string url_;
};

}  // namespace kforge::test
