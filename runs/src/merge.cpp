#include "kforge/runs/merge.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"
#include "kforge/runs/shard.hpp"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view to_string(MergeErrorKind k) {
  switch (k) {
    case MergeErrorKind::no_inputs:
      return "no_inputs";
    case MergeErrorKind::not_a_run:
      return "not_a_run";
    case MergeErrorKind::run_locked:
      return "run_locked";
    case MergeErrorKind::config_mismatch:
      return "config_mismatch";
    case MergeErrorKind::shard_mismatch:
      return "shard_mismatch";
    case MergeErrorKind::conflicting_attempt:
      return "conflicting_attempt";
    case MergeErrorKind::output_not_empty:
      return "output_not_empty";
    case MergeErrorKind::io_error:
      return "io_error";
  }
  return "unknown";
}

namespace {

using Fail = std::optional<MergeError>;

/// A shared flock on an input's .lock, released when destroyed.
struct SharedLock {
  int fd = -1;
  SharedLock() = default;
  SharedLock(SharedLock&& o) noexcept : fd(o.fd) { o.fd = -1; }
  SharedLock& operator=(SharedLock&&) = delete;
  ~SharedLock() {
    if (fd >= 0) ::close(fd);
  }
};

/// One input run, read and checked.
struct Input {
  fs::path dir;
  json manifest;
  Shard shard;
  std::vector<AttemptRecord> records;
  json unusable;  // null when the run has no unusable.json
  SharedLock lock;
};

MergeError fail(MergeErrorKind kind, std::string field, std::string message) {
  return MergeError{kind, std::move(field), std::move(message)};
}

/// Takes a shared flock on <dir>/.lock: fails when the run's writer (an exclusive flock) is alive.
Fail lock_input(Input& in) {
  const fs::path p = in.dir / ".lock";
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;  // never opened by a writer
  in.lock.fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (in.lock.fd < 0) return fail(MergeErrorKind::not_a_run, ".lock", p.string() + ": cannot open");
  if (::flock(in.lock.fd, LOCK_SH | LOCK_NB) == 0) return std::nullopt;
  std::string holder = trim(read_file(p));
  return fail(MergeErrorKind::run_locked, ".lock",
              in.dir.string() + ": the run is being written" +
                  (holder.empty() ? "" : " (pid " + holder + ")") +
                  "; merge it when its kforge run has ended");
}

Fail read_manifest(Input& in) {
  const fs::path p = in.dir / "manifest.json";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    return fail(MergeErrorKind::not_a_run, "manifest.json",
                in.dir.string() + ": not a run (no manifest.json)");
  in.manifest = json::parse(read_file(p), nullptr, false);
  if (!in.manifest.is_object() || !in.manifest.contains("config") || !in.manifest["config"].is_object())
    return fail(MergeErrorKind::not_a_run, "manifest.json",
                p.string() + ": not a run manifest (expected a JSON object with a \"config\" object)");
  const json& c = in.manifest["config"];
  if (!c.contains("shard")) return std::nullopt;  // a run made before --shard: 0/1
  auto s = c["shard"].is_string() ? parse_shard(c["shard"].get<std::string>()) : std::nullopt;
  if (!s)
    return fail(MergeErrorKind::shard_mismatch, "config.shard",
                p.string() + ": config.shard = " + c["shard"].dump() + " is not K/N");
  in.shard = *s;
  return std::nullopt;
}

Fail read_records(Input& in, MergeStats& st) {
  try {
    LoadedAttempts la = load_attempts(in.dir);
    in.records = std::move(la.records);
    st.warnings.insert(st.warnings.end(), la.warnings.begin(), la.warnings.end());
  } catch (const std::exception& e) {
    return fail(MergeErrorKind::not_a_run, "attempts.jsonl", e.what());
  }
  st.records_read += in.records.size();
  const fs::path u = in.dir / "unusable.json";
  std::error_code ec;
  if (fs::exists(u, ec)) {
    in.unusable = json::parse(read_file(u), nullptr, false);
    if (!in.unusable.is_object())
      return fail(MergeErrorKind::not_a_run, "unusable.json", u.string() + ": expected a JSON object");
  }
  return std::nullopt;
}

Fail read_input(const fs::path& dir, Input& in, MergeStats& st) {
  in.dir = fs::absolute(dir).lexically_normal();
  if (auto e = read_manifest(in)) return e;
  if (auto e = lock_input(in)) return e;
  return read_records(in, st);
}

std::string shown(const json& c, const std::string& k) {
  return c.contains(k) ? c[k].dump() : "(absent)";
}

/// True when the manifest's "option_rules" (written by `kforge run` from its option table,
/// agent/run_options.hpp) marks config key `k` operational ("free": endpoint, concurrency,
/// devices, limits, prices): shards may differ in it.
bool operational(const json& manifest, const std::string& k) {
  const auto it = manifest.find("option_rules");
  return it != manifest.end() && it->is_object() && it->value(k, std::string()) == "free";
}

/// The two manifests describe one configuration: the same command and every config field but
/// "shard" and the operational ones equal.
Fail check_same_config(const Input& a, const Input& b) {
  const std::string ca = a.manifest.value("command", ""), cb = b.manifest.value("command", "");
  if (ca != cb)
    return fail(MergeErrorKind::config_mismatch, "command",
                a.dir.string() + " is a '" + ca + "' run but " + b.dir.string() + " is a '" + cb + "' run");
  const json &x = a.manifest["config"], &y = b.manifest["config"];
  std::set<std::string> keys;
  for (const auto& [k, v] : x.items()) keys.insert(k);
  for (const auto& [k, v] : y.items()) keys.insert(k);
  for (const auto& k : keys) {
    if (k == "shard" || (x.contains(k) && y.contains(k) && x[k] == y[k])) continue;
    if (operational(a.manifest, k) || operational(b.manifest, k)) continue;
    return fail(MergeErrorKind::config_mismatch, "config." + k,
                "config." + k + " differs: " + a.dir.string() + " has " + shown(x, k) + ", " +
                    b.dir.string() + " has " + shown(y, k) +
                    " (the shards of one run share every option but --shard)");
  }
  return std::nullopt;
}

/// All inputs are shards of one N and each record lies in its run's shard; fills missing_shards.
Fail check_shards(const std::vector<Input>& ins, MergeStats& st) {
  const int n = ins.front().shard.count;
  std::set<int> present;
  for (const auto& in : ins) {
    if (in.shard.count != n)
      return fail(MergeErrorKind::shard_mismatch, "config.shard",
                  "config.shard differs in N: " + ins.front().dir.string() + " is " +
                      to_string(ins.front().shard) + ", " + in.dir.string() + " is " + to_string(in.shard) +
                      " (shards of different N do not partition one run)");
    present.insert(in.shard.index);
    for (const auto& r : in.records)
      if (!in_shard(in.shard, r.task, r.sample))
        return fail(MergeErrorKind::shard_mismatch, "attempts.jsonl",
                    in.dir.string() + ": task '" + r.task + "' sample " + std::to_string(r.sample) +
                        " is not in the run's shard " + to_string(in.shard));
  }
  for (int k = 0; k < n; ++k)
    if (!present.count(k)) st.missing_shards.push_back(k);
  return std::nullopt;
}

struct Kept {
  std::size_t input = 0;
  AttemptRecord record;
};

std::string key_text(const AttemptKey& k) {
  return "task '" + k.task + "' sample " + std::to_string(k.sample) + " turn " + std::to_string(k.turn);
}

/// Offers record `r` of input `i` for its key (the rules in merge.hpp).
Fail offer(std::map<AttemptKey, Kept>& kept, const std::vector<Input>& ins, std::size_t i,
           const AttemptRecord& r, MergeStats& st) {
  auto [it, fresh] = kept.try_emplace(key_of(r), Kept{i, r});
  if (fresh) return std::nullopt;
  Kept& k = it->second;
  if (k.input != i && to_json(k.record) == to_json(r)) {
    ++st.duplicates;  // the same record in two inputs (one shard given twice)
  } else if (k.input == i || !is_model_outcome(k.record.outcome)) {  // resume's rule: the later supersedes
    k = Kept{i, r};
    ++st.superseded;
  } else if (!is_model_outcome(r.outcome)) {
    ++st.superseded;  // a judged attempt beats an unjudged one
  } else {
    return fail(MergeErrorKind::conflicting_attempt, "attempts.jsonl",
                key_text(it->first) + " was judged in two runs: " + ins[k.input].dir.string() + " (" +
                    std::string(to_string(k.record.outcome)) + ") and " + ins[i].dir.string() + " (" +
                    std::string(to_string(r.outcome)) + "); merge only one of them");
  }
  return std::nullopt;
}

json merged_manifest(const std::vector<Input>& ins, const MergeStats& st) {
  json m = ins.front().manifest;
  for (const char* k : {"schema_version", "created_at", "resumes", "started_at"}) m.erase(k);
  m["config"]["shard"] = to_string(Shard{});
  m["merged_at"] = iso8601_utc_now();
  json from = json::array();
  for (const auto& in : ins)
    from.push_back({{"path", in.dir.string()},
                    {"shard", to_string(in.shard)},
                    {"runner", in.manifest.value("runner", json())},
                    {"created_at", in.manifest.value("created_at", json())},
                    {"resumes", in.manifest.value("resumes", json::array())},
                    {"records", in.records.size()}});
  m["merged_from"] = std::move(from);
  if (!st.missing_shards.empty()) m["missing_shards"] = st.missing_shards;
  // Complete when every shard is and none is missing; the wall time of shards run side by side
  // is the longest one's (run_status.hpp record_invocation).
  bool all_known = true, all_done = st.missing_shards.empty();
  double wall = 0;
  for (const auto& in : ins) {
    const json c = in.manifest.value("complete", json());
    all_known = all_known && c.is_boolean();
    all_done = all_done && c.is_boolean() && c.get<bool>();
    if (in.manifest.contains("wall_s") && in.manifest["wall_s"].is_number())
      wall = std::max(wall, in.manifest["wall_s"].get<double>());
  }
  const json complete = all_done                                  ? json(true)
                        : all_known || !st.missing_shards.empty() ? json(false)
                                                                  : json();
  m["complete"] = complete;
  if (wall > 0)
    m["wall_s"] = wall;
  else
    m.erase("wall_s");
  return m;
}

/// The union of the inputs' unusable.json (null when none has one); the first reason wins.
json merged_unusable(const std::vector<Input>& ins, MergeStats& st) {
  json u;
  for (const auto& in : ins) {
    if (in.unusable.is_null()) continue;
    if (u.is_null()) u = json::object();
    for (const auto& [task, why] : in.unusable.items()) {
      if (!u.contains(task))
        u[task] = why;
      else if (u[task] != why)
        st.warnings.push_back("unusable.json: task '" + task + "' has different reasons; kept the first");
    }
  }
  return u;
}

void warn_on_runners(const std::vector<Input>& ins, MergeStats& st) {
  const json first = ins.front().manifest.value("runner", json());
  for (const auto& in : ins)
    if (in.manifest.value("runner", json()) != first) {
      st.warnings.push_back("the shards ran on different runners (devices or versions): see merged_from");
      return;
    }
}

Fail check_output(const fs::path& out) {
  std::error_code ec;
  if (!fs::exists(out, ec)) return std::nullopt;
  if (fs::is_directory(out, ec) && fs::is_empty(out, ec)) return std::nullopt;
  return fail(MergeErrorKind::output_not_empty, "",
              out.string() + ": exists and is not an empty directory (merge into a new directory)");
}

/// Writes OUT: the manifest, the kept records in key order with their attempt directories,
/// and unusable.json.
void write_output(const fs::path& out, const std::vector<Input>& ins, const std::map<AttemptKey, Kept>& kept,
                  MergeStats& st) {
  json unusable = merged_unusable(ins, st);
  RunDir run = RunDir::create(out, merged_manifest(ins, st));
  for (const auto& [key, k] : kept) {
    const fs::path rel = attempt_rel_path(key.task, key.sample, key.turn);  // never the record's own path
    const fs::path src = ins[k.input].dir / rel;
    std::error_code ec;
    if (fs::is_directory(src, ec)) {
      fs::create_directories(run.path() / rel);
      fs::copy(src, run.path() / rel, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
    AttemptRecord r = k.record;
    r.attempt_dir = rel.string();
    run.append(r);
    ++st.attempts;
  }
  if (!unusable.is_null()) write_file(run.path() / "unusable.json", unusable.dump(2) + "\n");
}

}  // namespace

MergeResult merge_runs(const fs::path& out, const std::vector<fs::path>& inputs) {
  MergeResult res;
  res.stats.inputs = inputs.size();
  if (inputs.empty()) {
    res.error = fail(MergeErrorKind::no_inputs, "", "no run directories to merge");
    return res;
  }
  if ((res.error = check_output(out))) return res;
  std::vector<Input> ins(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if ((res.error = read_input(inputs[i], ins[i], res.stats))) return res;
    if (i > 0 && (res.error = check_same_config(ins.front(), ins[i]))) return res;
  }
  if ((res.error = check_shards(ins, res.stats))) return res;
  std::map<AttemptKey, Kept> kept;
  for (std::size_t i = 0; i < ins.size(); ++i)
    for (const auto& r : ins[i].records)
      if ((res.error = offer(kept, ins, i, r, res.stats))) return res;
  warn_on_runners(ins, res.stats);
  try {
    write_output(out, ins, kept, res.stats);
  } catch (const std::exception& e) {
    res.error = fail(MergeErrorKind::io_error, "", out.string() + ": " + e.what());
  }
  return res;
}

}  // namespace kforge
