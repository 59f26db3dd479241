#include "kforge/sandbox/compile_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "kforge/common/hash.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::sandbox {
namespace fs = std::filesystem;

namespace {

bool valid_key(const std::string& key) {
  return key.size() == 64 && std::all_of(key.begin(), key.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string unique_suffix() {
  static std::atomic<unsigned long> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-" +
         std::to_string(rng() & 0xffffffffu);
}

}  // namespace

std::string CompileKey::hash() const {
  auto sorted = sources;
  std::sort(sorted.begin(), sorted.end());
  Hasher h;
  h.update("kforge-compile-cache-v2");
  h.update(std::to_string(sorted.size()));
  for (const auto& [name, contents] : sorted) h.update(name).update(contents);
  h.update(std::to_string(flags.size()));
  for (const auto& f : flags) h.update(f);
  h.update(compiler_version);
  h.update(target_arch);
  return h.hex();
}

CompileCache::CompileCache(fs::path dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {}

fs::path CompileCache::default_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && fs::path(x).is_absolute())
    return fs::path(x) / "kforge" / "compile";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "kforge" / "compile";
  return fs::temp_directory_path() / "kforge-cache" / "compile";
}

std::optional<CacheEntry> CompileCache::lookup(const std::string& key) const {
  if (!valid_key(key)) return std::nullopt;
  const fs::path entry = dir_ / key;
  std::error_code ec;
  if (!fs::is_regular_file(entry / "artifact", ec)) return std::nullopt;
  CacheEntry e;
  e.artifact = entry / "artifact";
  // A hit is served only when the artifact still hashes to what was stored with it: a file
  // planted or altered in the cache directory is a miss (and is removed, so that the fresh
  // build can publish its entry).
  std::ifstream h(entry / "sha256");
  std::string stored;
  if (!(h >> stored) || stored != sha256_hex(read_file(e.artifact))) {
    fs::remove_all(entry, ec);
    return std::nullopt;
  }
  std::ifstream in(entry / "log", std::ios::binary);
  if (in) e.log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return e;
}

bool CompileCache::store(const std::string& key, const fs::path& artifact, const std::string& log,
                         std::string* error) const {
  auto fail = [&](const std::string& msg) {
    if (error) *error = msg;
    return false;
  };
  if (!valid_key(key)) return fail("compile cache: malformed key '" + key + "'");
  if (lookup(key)) return true;

  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fail(dir_.string() + ": " + ec.message());
  const fs::path tmp = dir_ / (".tmp-" + key.substr(0, 16) + "-" + unique_suffix());
  const fs::path final_dir = dir_ / key;
  auto cleanup = [&] {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
  };
  if (!fs::create_directory(tmp, ec) || ec) return fail(tmp.string() + ": " + ec.message());
  fs::copy_file(artifact, tmp / "artifact", fs::copy_options::overwrite_existing, ec);
  if (ec) {
    cleanup();
    return fail(artifact.string() + ": " + ec.message());
  }
  {
    std::ofstream sum(tmp / "sha256", std::ios::trunc);
    sum << sha256_hex(read_file(tmp / "artifact")) << "\n";
    if (!sum) {
      cleanup();
      return fail((tmp / "sha256").string() + ": write failed");
    }
  }
  {
    std::ofstream out(tmp / "log", std::ios::binary | std::ios::trunc);
    out.write(log.data(), static_cast<std::streamsize>(log.size()));
    if (!out) {
      cleanup();
      return fail((tmp / "log").string() + ": write failed");
    }
  }
  // Publish atomically. A directory cannot be renamed onto a non-empty one, so when another
  // process published the same key first, its (identical) entry stays and ours is dropped.
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    cleanup();
    if (lookup(key)) return true;
    return fail(final_dir.string() + ": " + ec.message());
  }
  return true;
}

std::string compiler_version(const std::string& argv0) {
  struct Slot {
    std::once_flag once;
    std::string text;
  };
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Slot>> slots;
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& s = slots[argv0];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::call_once(slot->once, [&] {
    Spec spec;
    spec.argv = {argv0, "--version"};
    spec.limits.wall = std::chrono::seconds(60);
    spec.limits.output_cap_bytes = 64 * 1024;
    Result r = run(spec);
    if (r.ok()) slot->text = trim(r.out.empty() ? r.err : r.out);
  });
  return slot->text;
}

}  // namespace kforge::sandbox
