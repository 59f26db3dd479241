// tests/unit/run_cmd.hpp — runs a program for a test (fork + execv), stdout and stderr captured
// through files in a directory the test owns; the exit code (-1 when killed by a signal). For
// tests only: blocking, single-threaded callers.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace kforge::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Ran {
  int code = -1;
  std::string out, err;
};

/// Runs argv (argv[0] a path) with `env_over` set (a value of "" removes the variable).
inline Ran run_cmd(const std::vector<std::string>& args, const std::map<std::string, std::string>& env_over,
                   const std::filesystem::path& dir) {
  const std::filesystem::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(o.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
        fe = open(e.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, STDOUT_FILENO);
    dup2(fe, STDERR_FILENO);
    for (const auto& [k, v] : env_over) {
      if (v.empty())
        unsetenv(k.c_str());
      else
        setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  Ran r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

#ifdef KFORGE_BUILD_DIR
/// Runs the built `kforge` with `args` (no environment changes), its output under `dir`.
inline Ran run_kforge(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  std::vector<std::string> argv{std::string(KFORGE_BUILD_DIR) + "/agent/kforge"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_cmd(argv, {}, dir);
}
#endif

}  // namespace kforge::test
