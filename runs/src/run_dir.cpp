#include "kforge/runs/run_dir.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "kforge/common/beneath.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/task_id.hpp"
#include "kforge/common/util.hpp"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kAttemptsFile = "attempts.jsonl";
constexpr const char* kManifestFile = "manifest.json";
constexpr const char* kLockFile = ".lock";

std::string errno_text() {
  return std::strerror(errno);
}

/// RAII file descriptor.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void write_all(int fd, std::string_view data, const fs::path& what) {
  // One write() for the whole line; the loop only matters if the kernel returns a short write
  // (disk nearly full), in which case we finish the line rather than leave half of it.
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(what.string() + ": write failed: " + errno_text());
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

Fd take_lock(const fs::path& dir) {
  fs::path p = dir / kLockFile;
  Fd fd(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (fd.fd < 0) throw std::runtime_error(p.string() + ": cannot open lock file: " + errno_text());
  if (::flock(fd.fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder;
    try {
      holder = trim(read_file(p));
    } catch (...) {
    }
    if (err == EWOULDBLOCK)
      throw std::runtime_error(dir.string() + ": run is locked by another writer" +
                               (holder.empty() ? std::string() : " (pid " + holder + ")"));
    throw std::runtime_error(p.string() + ": flock failed: " + std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.fd, 0) == 0) {
    ssize_t ignored = ::pwrite(fd.fd, pid.data(), pid.size(), 0);
    (void)ignored;
  }
  return fd;
}

Fd open_attempts_for_append(const fs::path& dir) {
  fs::path p = dir / kAttemptsFile;
  Fd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (fd.fd < 0) throw std::runtime_error(p.string() + ": cannot open for append: " + errno_text());
  return fd;
}

void fsync_dir(const fs::path& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.fd >= 0) ::fsync(d.fd);
}

/// Parses the text of attempts.jsonl. `file` names it in errors and warnings.
LoadedAttempts parse_attempts(std::string_view text, const std::string& file) {
  LoadedAttempts out;
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    std::size_t nl = text.find('\n', pos);
    bool terminated = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, terminated ? nl - pos : std::string_view::npos);
    pos = terminated ? nl + 1 : text.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      if (!terminated) {
        std::string w = file + ": line " + std::to_string(line_no) + ": ignoring a truncated last line (" +
                        std::to_string(line.size()) + " bytes; the writer was interrupted)";
        spdlog::warn("{}", w);
        out.warnings.push_back(std::move(w));
        break;
      }
      throw RecordError(file, line_no, "", std::string("invalid JSON: ") + e.what());
    }
    try {
      out.records.push_back(attempt_from_json(j, line_no));
    } catch (const RecordError& e) {
      throw RecordError(file, e.line(), e.field(), e.reason());
    }
  }
  return out;
}

}  // namespace

LoadedAttempts load_attempts(const fs::path& run_dir) {
  fs::path p = run_dir / kAttemptsFile;
  std::error_code ec;
  if (!fs::exists(p, ec)) return {};
  return parse_attempts(read_file(p), p.string());
}

fs::path attempt_rel_path(const std::string& task, int sample, int turn) {
  require_valid_task_id(task);
  if (sample < 0) throw std::invalid_argument("sample " + std::to_string(sample) + " < 0");
  if (turn < 1) throw std::invalid_argument("turn " + std::to_string(turn) + " < 1");
  return fs::path("attempts") / fs::path(task) / std::to_string(sample) / std::to_string(turn);
}

struct RunDir::Impl {
  fs::path dir;
  json manifest;
  Fd lock;
  Fd attempts;
  mutable std::mutex mu;
  std::set<AttemptKey> keys;
  std::size_t count = 0;
};

RunDir::RunDir(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RunDir::RunDir(RunDir&&) noexcept = default;
RunDir& RunDir::operator=(RunDir&&) noexcept = default;
RunDir::~RunDir() = default;

namespace {
void require_object(const json& manifest) {
  if (!manifest.is_object())
    throw std::invalid_argument("run manifest must be a JSON object, got " +
                                std::string(manifest.type_name()));
}
void write_manifest(const fs::path& dir, const json& manifest) {
  write_file(dir / kManifestFile, dump_json(manifest, 2) + "\n");
}
}  // namespace

RunDir RunDir::create(const fs::path& dir_in, const json& manifest) {
  require_object(manifest);
  fs::path dir = fs::absolute(dir_in);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      throw std::runtime_error(dir.string() + ": exists and is not a directory");
    if (!fs::is_empty(dir, ec))
      throw std::runtime_error(dir.string() +
                               ": run directory exists and is not empty (use --resume to "
                               "continue it, or choose a new directory)");
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create: " + ec.message());

  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->lock = take_lock(dir);
  // Another process may have created the run between the emptiness check and the lock.
  if (fs::exists(dir / kManifestFile, ec) || fs::exists(dir / kAttemptsFile, ec))
    throw std::runtime_error(dir.string() + ": run directory was created by another process");

  impl->manifest = manifest;
  if (!impl->manifest.contains("schema_version")) impl->manifest["schema_version"] = kRunSchemaVersion;
  if (!impl->manifest.contains("created_at")) impl->manifest["created_at"] = iso8601_utc_now();
  write_manifest(dir, impl->manifest);
  impl->attempts = open_attempts_for_append(dir);
  fs::create_directories(dir / "attempts");
  fsync_dir(dir);
  return RunDir(std::move(impl));
}

RunDir RunDir::open_for_resume(const fs::path& dir_in) {
  fs::path dir = fs::absolute(dir_in);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir.string() + ": no such run directory");
  if (!fs::exists(dir / kManifestFile, ec))
    throw std::runtime_error(dir.string() + ": not a run directory (no " + kManifestFile + ")");

  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->lock = take_lock(dir);

  fs::path mpath = dir / kManifestFile;
  try {
    impl->manifest = json::parse(read_file(mpath));
  } catch (const json::parse_error& e) {
    throw std::runtime_error(mpath.string() + ": invalid JSON: " + e.what());
  }
  if (!impl->manifest.is_object()) throw std::runtime_error(mpath.string() + ": expected a JSON object");
  if (auto it = impl->manifest.find("schema_version"); it != impl->manifest.end()) {
    if (!it->is_number_integer())
      throw std::runtime_error(mpath.string() + ": field 'schema_version': expected an integer");
    if (it->get<int>() > kRunSchemaVersion)
      throw std::runtime_error(mpath.string() +
                               ": field 'schema_version': " + std::to_string(it->get<int>()) +
                               " is newer than this kforge (" + std::to_string(kRunSchemaVersion) + ")");
  }

  fs::path apath = dir / kAttemptsFile;
  if (fs::exists(apath, ec)) {
    std::string text = read_file(apath);
    LoadedAttempts loaded = parse_attempts(text, apath.string());
    if (!text.empty() && text.back() != '\n') {
      std::size_t keep = text.rfind('\n');
      keep = keep == std::string::npos ? 0 : keep + 1;
      if (loaded.warnings.empty()) {
        // The last line parsed: it is complete but lacks its newline. Add it.
        Fd fd = open_attempts_for_append(dir);
        write_all(fd.fd, "\n", apath);
        ::fsync(fd.fd);
      } else {
        // A torn last line: cut it off so the next append starts on a fresh line.
        if (::truncate(apath.c_str(), static_cast<off_t>(keep)) != 0)
          throw std::runtime_error(apath.string() + ": cannot cut the torn last line: " + errno_text());
        spdlog::warn("{}: cut a torn last line ({} bytes) before resuming", apath.string(),
                     text.size() - keep);
      }
    }
    for (const auto& r : loaded.records) impl->keys.insert(key_of(r));
    impl->count = loaded.records.size();
  }
  impl->attempts = open_attempts_for_append(dir);
  return RunDir(std::move(impl));
}

const fs::path& RunDir::path() const {
  return impl_->dir;
}
const json& RunDir::manifest() const {
  return impl_->manifest;
}

void RunDir::update_manifest(const json& manifest) {
  require_object(manifest);
  json m = manifest;
  for (const char* k : {"schema_version", "created_at"})
    if (impl_->manifest.contains(k)) m[k] = impl_->manifest[k];
  write_manifest(impl_->dir, m);
  impl_->manifest = std::move(m);
}

void RunDir::append(const AttemptRecord& r) {
  if (r.task.empty()) throw std::invalid_argument("attempt record has no task id");
  if (r.sample < 0) throw std::invalid_argument("attempt record: sample < 0");
  if (r.turn < 1) throw std::invalid_argument("attempt record: turn < 1");
  std::string line = to_jsonl(r);
  fs::path apath = impl_->dir / kAttemptsFile;
  std::lock_guard<std::mutex> g(impl_->mu);
  write_all(impl_->attempts.fd, line, apath);
  if (::fsync(impl_->attempts.fd) != 0)
    throw std::runtime_error(apath.string() + ": fsync failed: " + errno_text());
  impl_->keys.insert(key_of(r));
  ++impl_->count;
}

fs::path RunDir::attempt_path(const std::string& task, int sample, int turn) const {
  return impl_->dir / attempt_rel_path(task, sample, turn);
}

fs::path RunDir::write_attempt_file(const std::string& task, int sample, int turn, std::string_view name,
                                    std::string_view content) const {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    throw std::invalid_argument("attempt file name '" + std::string(name) + "' is not a plain file name");
  const fs::path rel = attempt_rel_path(task, sample, turn) / std::string(name);
  write_file_beneath(impl_->dir, rel, content);  // never through a link planted in the run
  return impl_->dir / rel;
}

fs::path RunDir::write_attempt_json(const std::string& task, int sample, int turn, std::string_view name,
                                    const json& value) const {
  return write_attempt_file(task, sample, turn, name, dump_json(value, 2) + "\n");
}

std::vector<AttemptRecord> RunDir::load_attempts() const {
  std::lock_guard<std::mutex> g(impl_->mu);  // no append is half-way through
  return kforge::load_attempts(impl_->dir).records;
}

std::set<AttemptKey> RunDir::finished_keys() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->keys;
}

bool RunDir::is_finished(const AttemptKey& k) const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->keys.count(k) > 0;
}

std::size_t RunDir::attempt_count() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return impl_->count;
}

}  // namespace kforge
