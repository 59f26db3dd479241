// agent/src/library_verify.cpp — `kforge library verify` (library_verify.hpp).
#include "kforge/agent/library_verify.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "kforge/agent/attempt.hpp"
#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/agent/runners.hpp"
#include "kforge/backends/backend.hpp"
#include "kforge/backends/compile.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/backends/symbols.hpp"
#include "kforge/benchmarks/backend_export.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/hash.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kforge::agent {

namespace {

/// The judge's identity a verdict depends on: device kind, GPU names, torch, Triton, LibTorch.
json environment(const std::string& device, const json& hello) {
  json gpus = json::array();
  if (hello.contains("devices") && hello["devices"].is_array())
    for (const auto& d : hello["devices"])
      if (d.is_object()) gpus.push_back(d.value("name", ""));
  return {{"device", device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"},
          {"gpus", gpus},
          {"torch", hello.value("torch", "")},
          {"triton", hello.value("triton", "")},
          {"libtorch", hello.value("libtorch", "")}};
}

/// What differs between the recorded environment and this one, one phrase per field.
std::vector<std::string> environment_changes(const json& then, const json& now) {
  std::vector<std::string> out;
  for (const auto& [k, v] : now.items())
    if (then.contains(k) && then[k] != v) out.push_back(k + " " + then[k].dump() + " -> " + v.dump());
  return out;
}

/// What the judge said about one operator's kernel now.
struct VerdictNow {
  std::string outcome = "not_judged", sub_kind, message;
  double speedup = 0;  ///< 0 = not timed
};

/// An operator name safe as part of a file name: letters, digits, '_' and '.', not leading '.'.
bool plain_name(const std::string& op) {
  return !op.empty() && op[0] != '.' &&
         op.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
             std::string::npos;
}

/// Each operator's kernel file, read once: the bytes judged, hashed and recorded are these. A
/// kernel named outside kernels/ or with an unplain operator name is left out (not judged).
std::map<std::string, std::string> kernel_bytes(const fs::path& pkg, const json& manifest) {
  std::map<std::string, std::string> out;
  for (const auto& e : manifest["operators"]) {
    // Names from the (editable) manifest become paths: plain names under kernels/ only.
    const std::string op = e.value("operator", ""), file = e.value("kernel_file", "");
    const fs::path f = pkg / file;
    std::error_code ec;
    if (plain_name(op) && fs::path(file).parent_path() == "kernels" &&
        plain_name(fs::path(file).filename()) && fs::is_regular_file(f, ec))
      out[op] = read_file(f);
  }
  return out;
}

/// A manifest entry's kernel kind ("kind"; absent: a Python module, as the first packages
/// wrote); nullopt for a kind kforge does not know.
std::optional<PackageKernelKind> kernel_kind(const json& e) {
  return parse_package_kernel_kind(e.value("kind", to_string(PackageKernelKind::python_module)));
}

/// The backend of a shared object's entry: its "backend", or, in packages written before the
/// field, the one its source's suffix implies (.cu: cuda, else cpu).
std::string native_backend(const json& e) {
  if (e.contains("backend") && e["backend"].is_string()) return e["backend"].get<std::string>();
  return fs::path(e.value("source_file", "")).extension() == ".cu" ? "cuda" : "cpu";
}

/// The Triton modules, judged by eval (the operator's adapter appended, as in the run). Returns
/// eval's exit status (0 when there is nothing to judge).
int judge_triton(const fs::path& pkg, const json& manifest, const std::map<std::string, std::string>& bytes,
                 const VerifyCommand& cmd, const std::string& device, const fs::path& work,
                 std::map<std::string, VerdictNow>& got) {
  bool any = false;
  for (const auto& e : manifest["operators"]) {
    const std::string op = e.value("operator", "");
    if (kernel_kind(e) != PackageKernelKind::python_module || !bytes.count(op)) continue;
    write_file(work / "kernels" / op / "kernel.py", bytes.at(op));
    any = true;
  }
  if (!any) return 0;
  EvalCommand ev;
  ev.suite = (pkg / manifest["cases_file"].get<std::string>()).parent_path().string();
  ev.backend = "triton";
  ev.kernels = work / "kernels";
  ev.out = work / "eval";
  ev.device = device;
  ev.bench = cmd.bench;
  ev.reps = cmd.reps;
  ev.profiler = "none";
  const int rc = run_eval(ev);
  for (const auto& [op, r] : eval_records(work / "eval"))
    got[op] = {std::string(to_string(r.outcome)), r.sub_kind, r.message, r.speedup};
  return rc;
}

/// One shared object judged as it is (no rebuild): the symbol check, then the judge's check
/// (and bench) through kforge-host on the task built from the package's cases.
VerdictNow judge_shared_object(backends::RunnerClient& runner, const Task& task, const std::string& bytes,
                               const VerifyCommand& cmd, const fs::path& dir) {
  VerdictNow j;
  const fs::path so = dir / backends::kArtifactName;
  write_file(so, bytes);
  const auto sym = backends::check_symbols(so);
  if (!sym.tools_ok) return {"infra_error", "toolchain_missing", sym.error};
  if (!sym.forbidden.empty())
    return {"forbidden_api", sym.forbidden.front().rule, sym.forbidden.front().demangled};
  const backends::TaskRef ref = task_ref_for(task, "default", {});
  const auto load = load_task(runner, ref);
  if (!load) return {"infra_error", "load", load.failure().message};
  std::random_device rd;
  const int64_t seed = std::uniform_int_distribution<int64_t>(1, 1'000'000'000)(rd);
  const auto c = runner.check(ref, so, 5, seed, backends::HostKind::native);
  j = {std::string(to_string(c.outcome)), c.sub_kind, c.message};
  if (c.outcome != Outcome::pass || !cmd.bench) return j;
  backends::BenchOptions bo;
  bo.reps = cmd.reps;
  const auto b = runner.bench(ref, so, bo, backends::HostKind::native);
  if (!b.ok) return {std::string(to_string(b.outcome)), b.sub_kind, b.message};
  j.speedup = b.speedup;
  return j;
}

/// The shared objects, each judged as exported (library_verify.hpp). 0, or 3 when no runner.
int judge_native(const fs::path& pkg, const json& manifest, const std::map<std::string, std::string>& bytes,
                 const VerifyCommand& cmd, const std::string& device, const fs::path& work,
                 std::map<std::string, VerdictNow>& got) {
  std::map<std::string, std::string> todo;  // operator -> backend
  for (const auto& e : manifest["operators"])
    if (kernel_kind(e) == PackageKernelKind::shared_object && bytes.count(e.value("operator", "")))
      todo[e.value("operator", "")] = native_backend(e);
  if (todo.empty()) return 0;
  const auto backend = backends::find_backend(todo.begin()->second);
  StartedRunners started = start_runners({}, device, *backend, "kforge library verify");
  if (started.rc) return started.rc;
  std::map<std::string, Task> tasks;
  for (auto& t : load_suite((pkg / manifest["cases_file"].get<std::string>()).parent_path()).tasks)
    tasks.emplace(t.id, std::move(t));
  for (const auto& [op, be] : todo) {
    auto it = tasks.find(op);
    got[op] = it == tasks.end() ? VerdictNow{"not_judged", "", "no case of it in the package's cases file"}
                                : judge_shared_object(*started.runners[0], it->second, bytes.at(op), cmd,
                                                      work / "native" / op);
  }
  return 0;
}

/// Where `library verify` keeps its records (library_verify.hpp).
fs::path verified_dir() {
  if (const char* d = std::getenv("KFORGE_VERIFIED_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "kforge" / "verified";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/nonexistent") / ".local" / "share" / "kforge" / "verified";
}

/// Writes (record given) or removes the record of the artifact hashing to `sha` serving `op`:
/// <dir>/<sha>.<op>.json, 0444, replaced by rename so a reader sees the old or the new one whole.
void set_record(const fs::path& dir, const std::string& sha, const std::string& op, const json* record) {
  std::error_code ec;
  if (!plain_name(op)) return;
  const fs::path file = dir / (sha + "." + op + ".json");
  if (!record) {
    fs::remove(file, ec);
    return;
  }
  const fs::path tmp = dir / ("." + sha + "." + op + ".tmp");
  fs::remove(tmp, ec);  // a crashed run's, 0444
  write_file(tmp, dump_json(*record, 2) + "\n");
  fs::permissions(tmp, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::rename(tmp, file);
}

/// Why the package's loader is not kforge's own ("" when __init__.py and confined.py are byte for
/// byte kforge's templates in KFORGE_HOME's benchmarks/backend/).
std::string loader_change(const fs::path& pkg) {
  const fs::path dir = kforge_home() / "benchmarks" / "backend";
  for (const auto& [mine, theirs] : {std::pair<std::string, std::string>{"__init__.py", "__init__.py.in"},
                                     {"confined.py", "confined.py"}}) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / theirs, ec))
      return "kforge's loader template is missing: " + (dir / theirs).string();
    if (!fs::is_regular_file(pkg / mine, ec) ||
        sha256_hex(read_file(pkg / mine)) != sha256_hex(read_file(dir / theirs)))
      return "the package's loader (" + mine + ") is not kforge's " + (dir / theirs).string();
  }
  return "";
}

}  // namespace

namespace {

std::string hello_of(const std::string& device) {
  backends::RunnerConfig rc;
  rc.device = device;
  backends::RunnerClient runner(rc);
  auto said = runner.hello();
  return said ? said.value() : "";
}

/// What verify decided for the package as a whole, shared by every operator's row.
struct VerifyContext {
  fs::path pkg, records;
  json now;                              ///< this environment
  std::vector<std::string> env_changes;  ///< against the one recorded at export
  std::string loader;                    ///< loader_change(): "" when kforge's own
  std::string cases_sha256, at;
};

/// One operator: its status in the manifest, its record written or removed. Returns the status.
std::string verify_one(json& e, const VerifyContext& cx, const std::map<std::string, std::string>& bytes,
                       const std::map<std::string, VerdictNow>& got) {
  const std::string op = e.value("operator", "");
  std::vector<std::string> reasons;
  const auto b = bytes.find(op);
  const std::string sha = b == bytes.end() ? "" : sha256_hex(b->second);
  const fs::path source = cx.pkg / e.value("source_file", e.value("kernel_file", ""));
  const bool same =
      !sha.empty() && sha == e.value("kernel_sha256", "") &&
      (!e.contains("source_sha256") || kernel_kind(e) != PackageKernelKind::shared_object ||
       (fs::is_regular_file(source) && sha256_hex(read_file(source)) == e.value("source_sha256", "")));
  if (!same) reasons.push_back("kernel file changed since export (SHA-256 differs from the manifest)");
  if (!cx.loader.empty()) reasons.push_back(cx.loader);
  if (!kernel_kind(e))
    reasons.push_back("manifest.json: operator " + op + ": kind \"" + e.value("kind", "") +
                      "\" is not a kernel kind of kforge (shared_object, python_module): not judged");
  if (!plain_name(op)) reasons.push_back("the operator name is not a plain name: nothing is recorded for it");
  auto it = got.find(op);
  const VerdictNow j = it == got.end() ? VerdictNow{} : it->second;
  if (j.outcome != "pass")
    reasons.push_back("fails now: " + j.outcome + (j.sub_kind.empty() ? "" : "/" + j.sub_kind));
  for (const auto& c : cx.env_changes) reasons.push_back("recorded on another environment: " + c);
  const std::string status = j.outcome != "pass"           ? "failing"
                             : !same || !cx.loader.empty() ? "changed"
                             : reasons.empty()             ? "ok"
                                                           : "stale_environment";
  e["verify"] = {{"status", status},
                 {"reasons", reasons},
                 {"outcome", j.outcome},
                 {"sub_kind", j.sub_kind},
                 {"speedup", j.speedup > 0 ? json(j.speedup) : json(nullptr)},
                 {"checked_at", cx.at},
                 {"environment", cx.now},
                 {"kernel_sha256", sha}};
  e["stale"] = status != "ok";
  // The record the package's loader trusts: only the judged bytes' hash, only when they pass here
  // under kforge's own loader.
  if (!sha.empty()) {
    const bool trusted = j.outcome == "pass" && cx.loader.empty() && plain_name(op);
    const json rec{{"kernel_sha256", sha},
                   {"operator", op},
                   {"entry", e.value("entry", "")},
                   {"kind", e.value("kind", to_string(PackageKernelKind::python_module))},
                   {"status", status},
                   {"outcome", j.outcome},
                   {"verified_at", cx.at},
                   {"environment", cx.now},
                   {"cases_sha256", cx.cases_sha256},
                   {"package", fs::absolute(cx.pkg).string()},
                   {"generator", "kforge library verify"}};
    set_record(cx.records, sha, op, trusted ? &rec : nullptr);
  }
  std::printf("%-34s %-10s %-18s %-18s %s\n", op.c_str(), same ? "same" : "CHANGED",
              (j.outcome + (j.sub_kind.empty() ? "" : "/" + j.sub_kind)).c_str(), status.c_str(),
              reasons.empty() ? "-" : reasons.front().c_str());
  return status;
}

}  // namespace

int run_library_verify(const VerifyCommand& cmd) {
  const fs::path pkg = cmd.dir / "kforge_backend";
  json manifest = json::parse(
      fs::is_regular_file(pkg / "manifest.json") ? read_file(pkg / "manifest.json") : "", nullptr, false);
  if (!manifest.is_object() || !manifest.contains("operators") || !manifest["operators"].is_array()) {
    std::cerr << "kforge library verify: " << cmd.dir.string() << ": no kforge_backend/manifest.json\n";
    return 2;
  }
  const json cases_file = manifest.value("cases_file", json());
  const fs::path cases = pkg / (cases_file.is_string() ? cases_file.get<std::string>() : std::string());
  if (!cases_file.is_string() || !fs::is_regular_file(cases)) {
    std::cerr << "kforge library verify: the package carries no cases file (exported from a run without its "
                 "suite): nothing to judge against\n";
    return 2;
  }
  VerifyContext cx;
  cx.pkg = pkg;
  cx.records = cmd.records.empty() ? verified_dir() : cmd.records;
  std::error_code ec;
  fs::create_directories(cx.records, ec);
  if (ec || !fs::is_directory(cx.records)) {
    std::cerr << "kforge library verify: cannot create the record directory " << cx.records.string() << "\n";
    return 2;
  }
  const std::string device = cmd.device.empty() ? manifest.value("device", "cpu") : cmd.device;
  const json hello = json::parse(hello_of(device), nullptr, false);
  if (!hello.is_object()) {
    std::cerr << "kforge library verify: kforge-runner did not start on " << device << "\n";
    return 3;
  }
  cx.now = environment(device, hello);
  cx.env_changes = environment_changes(
      environment(manifest.value("device", "cpu"), manifest.value("toolchain", json::object())), cx.now);
  cx.loader = loader_change(pkg);
  cx.cases_sha256 = sha256_hex(read_file(cases));
  const fs::path work = cmd.dir / ".kforge-verify";
  fs::remove_all(work, ec);
  const auto bytes = kernel_bytes(pkg, manifest);
  std::map<std::string, VerdictNow> got;
  if (int rc = judge_native(pkg, manifest, bytes, cmd, device, work, got)) return rc;
  if (int rc = judge_triton(pkg, manifest, bytes, cmd, device, work, got); rc != 0 && rc != kExitInfraError)
    return rc;
  cx.at = iso8601_utc_now();
  int bad = 0, stale = 0, ok = 0;
  std::printf("\n%-34s %-10s %-18s %-18s %s\n", "operator", "kernel", "outcome now", "status", "reasons");
  for (auto& e : manifest["operators"]) {
    const std::string status = verify_one(e, cx, bytes, got);
    (status == "ok" ? ok : status == "stale_environment" ? stale : bad)++;
  }
  manifest["verified"] = {{"at", cx.at}, {"environment", cx.now},
                          {"ok", ok},    {"stale_environment", stale},
                          {"bad", bad},  {"records", cx.records.string()}};
  write_file(pkg / "manifest.json", dump_json(manifest, 2) + "\n");
  std::printf(
      "\nkforge library verify: %d ok, %d stale (environment), %d changed or failing; manifest updated: %s; "
      "records of the passing kernels in %s\n",
      ok, stale, bad, (pkg / "manifest.json").string().c_str(), cx.records.string().c_str());
  return bad > 0 ? 1 : 0;
}

}  // namespace kforge::agent
