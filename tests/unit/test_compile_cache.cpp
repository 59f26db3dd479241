// Tests of the content-addressed compile cache (kforge/sandbox/compile_cache.hpp).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "kforge/sandbox/compile_cache.hpp"

using namespace kforge::sandbox;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& tag) {
  std::random_device rd;
  auto p = fs::temp_directory_path() /
           ("kforge-cache-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CompileKey base_key() {
  CompileKey k;
  k.sources = {{"kernel.cu", "__global__ void k() {}\n"}, {"helper.h", "#pragma once\n"}};
  k.flags = {"nvcc", "-O3", "-shared", "-o", "kernel.so", "kernel.cu"};
  k.compiler_version = "Cuda compilation tools, release 12.4, V12.4.131";
  k.target_arch = "sm_90";
  return k;
}

}  // namespace

TEST_CASE("compile cache keys change with every input that matters", "[cache]") {
  const CompileKey k = base_key();
  const std::string h = k.hash();
  CHECK(h.size() == 64);
  CHECK(h.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(base_key().hash() == h);  // deterministic

  std::set<std::string> seen{h};
  auto differs = [&](const CompileKey& other) {
    auto oh = other.hash();
    bool fresh = seen.insert(oh).second;
    return fresh && oh != h;
  };
  {
    auto o = k;
    o.sources[0].second += " ";
    CHECK(differs(o));
  }
  {
    auto o = k;
    o.sources[0].first = "kernel2.cu";
    CHECK(differs(o));
  }
  {
    auto o = k;
    o.sources.push_back({"extra.h", ""});
    CHECK(differs(o));
  }
  {
    auto o = k;
    o.flags[1] = "-O2";
    CHECK(differs(o));
  }
  {
    auto o = k;
    std::swap(o.flags[1], o.flags[2]);  // argv order matters
    CHECK(differs(o));
  }
  {
    auto o = k;
    o.compiler_version = "Cuda compilation tools, release 12.5, V12.5.40";
    CHECK(differs(o));
  }
  {
    auto o = k;
    o.target_arch = "sm_80";
    CHECK(differs(o));
  }
  {
    // Boundaries between fields are unambiguous: moving text across them changes the key.
    auto o = k;
    o.flags.back() += "x";
    auto p = k;
    p.compiler_version = "x" + p.compiler_version;
    CHECK(o.hash() != p.hash());
  }
  {
    // Source order does not matter (files are a set).
    auto o = k;
    std::swap(o.sources[0], o.sources[1]);
    CHECK(o.hash() == h);
  }
}

TEST_CASE("compile cache: miss, store, hit", "[cache]") {
  auto root = fresh_dir("hit");
  CompileCache cache(root / "cache");
  CHECK(cache.dir() == root / "cache");
  const std::string key = base_key().hash();

  CHECK_FALSE(cache.lookup(key).has_value());
  CHECK_FALSE(cache.lookup("not-a-key").has_value());

  const std::string blob(
      "\x7f"
      "ELF\0binary\xff",
      12);
  std::ofstream(root / "kernel.so", std::ios::binary) << blob;
  std::string error;
  REQUIRE(cache.store(key, root / "kernel.so", "ptxas info: 32 registers\n", &error));
  CHECK(error.empty());

  auto hit = cache.lookup(key);
  REQUIRE(hit.has_value());
  CHECK(hit->artifact == root / "cache" / key / "artifact");
  CHECK(slurp(hit->artifact) == blob);
  CHECK(hit->log == "ptxas info: 32 registers\n");

  // The entry does not depend on the original file.
  fs::remove(root / "kernel.so");
  CHECK(slurp(cache.lookup(key)->artifact) == blob);

  // Another key still misses; no temporary directories are left behind.
  auto other = base_key();
  other.target_arch = "sm_80";
  CHECK_FALSE(cache.lookup(other.hash()).has_value());
  for (const auto& e : fs::directory_iterator(root / "cache"))
    CHECK(e.path().filename().string().rfind(".tmp", 0) != 0);

  // Failures are values naming the path.
  CHECK_FALSE(cache.store(other.hash(), root / "missing.so", "", &error));
  CHECK(error.find("missing.so") != std::string::npos);
  CHECK_FALSE(cache.lookup(other.hash()).has_value());
  CHECK_FALSE(cache.store("../escape", root / "x", "", &error));
  CHECK(error.find("malformed key") != std::string::npos);

  fs::remove_all(root);
}

TEST_CASE("compile cache: concurrent stores of one key are safe", "[cache]") {
  auto root = fresh_dir("race");
  CompileCache cache(root / "cache");
  const std::string key = base_key().hash();
  const std::string blob(200000, 'k');
  std::ofstream(root / "a.so", std::ios::binary) << blob;

  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&] {
      std::string err;
      if (cache.store(key, root / "a.so", "log", &err)) ++ok;
    });
  for (auto& t : threads) t.join();
  CHECK(ok == 6);
  auto hit = cache.lookup(key);
  REQUIRE(hit.has_value());
  CHECK(slurp(hit->artifact) == blob);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(root / "cache")) {
    ++entries;
    CHECK(e.path().filename() == key);
  }
  CHECK(entries == 1);

  // Two processes: a forked child stores while the parent stores.
  auto key2 = base_key();
  key2.flags.push_back("-g");
  const std::string k2 = key2.hash();
  pid_t pid = ::fork();
  if (pid == 0) {
    bool stored = CompileCache(root / "cache").store(k2, root / "a.so", "log2", nullptr);
    ::_exit(stored ? 0 : 1);
  }
  REQUIRE(pid > 0);
  std::string err;
  bool mine = cache.store(k2, root / "a.so", "log2", &err);
  int ws = 0;
  ::waitpid(pid, &ws, 0);
  CHECK(mine);
  CHECK((WIFEXITED(ws) && WEXITSTATUS(ws) == 0));
  REQUIRE(cache.lookup(k2).has_value());
  CHECK(cache.lookup(k2)->log == "log2");
  fs::remove_all(root);
}

TEST_CASE("compile cache default directory follows XDG_CACHE_HOME, then HOME", "[cache]") {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved_xdg = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/kforge-xdg", 1);
  CHECK(CompileCache::default_dir() == fs::path("/tmp/kforge-xdg/kforge/compile"));
  CHECK(CompileCache().dir() == fs::path("/tmp/kforge-xdg/kforge/compile"));
  ::unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME"); home && *home)
    CHECK(CompileCache::default_dir() == fs::path(home) / ".cache" / "kforge" / "compile");
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

TEST_CASE("compiler_version runs the compiler once and remembers", "[cache]") {
  auto v = compiler_version("g++");
  REQUIRE_FALSE(v.empty());
  CHECK((v.find("g++") != std::string::npos || v.find("GCC") != std::string::npos));
  CHECK(v.find('\n') != std::string::npos);  // full text, not just the first line

  // Memoised: the same text, fast, also from several threads at once.
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      if (compiler_version("g++") == v) ++same;
    });
  for (auto& t : threads) t.join();
  CHECK(same == 4);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50));

  CHECK(compiler_version("kforge-no-such-compiler").empty());
}

TEST_CASE("compile cache: a planted or altered artifact is never served", "[cache]") {
  auto root = fresh_dir("planted");
  CompileCache cache(root / "cache");
  const std::string key = base_key().hash();
  std::ofstream(root / "kernel.so", std::ios::binary) << std::string("honest artifact");
  REQUIRE(cache.store(key, root / "kernel.so", "log"));
  REQUIRE(cache.lookup(key).has_value());
  // Someone with write access to the cache swaps the artifact: a miss, and the entry is gone.
  std::ofstream(root / "cache" / key / "artifact", std::ios::binary | std::ios::trunc) << "planted";
  CHECK_FALSE(cache.lookup(key).has_value());
  CHECK_FALSE(std::filesystem::exists(root / "cache" / key));
  // An entry without its hash (written by hand, or by an older kforge) is a miss as well.
  std::filesystem::create_directories(root / "cache" / key);
  std::ofstream(root / "cache" / key / "artifact", std::ios::binary) << "planted";
  CHECK_FALSE(cache.lookup(key).has_value());
  // The honest store works again afterwards.
  REQUIRE(cache.store(key, root / "kernel.so", "log"));
  CHECK(cache.lookup(key).has_value());
}
