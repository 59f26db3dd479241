// agent/src/library_verify.cpp — `kforge library verify` (library_verify.hpp).
#include "kforge/agent/library_verify.hpp"

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "kforge/agent/evaluation.hpp"
#include "kforge/backends/runner_client.hpp"
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

/// The latest record per operator of the eval's attempts.jsonl.
std::map<std::string, json> verdicts(const fs::path& out) {
  std::map<std::string, json> m;
  if (!fs::is_regular_file(out / "attempts.jsonl")) return m;
  for (const auto& line : split_lines(read_file(out / "attempts.jsonl"))) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object()) m[j.value("task", "")] = j;
  }
  return m;
}

std::string hello_of(const std::string& device) {
  backends::RunnerConfig rc;
  rc.device = device;
  backends::RunnerClient runner(rc);
  auto said = runner.hello();
  return said ? said.value() : "";
}

/// Judges every kernel of the package again into `work`. Returns eval's exit status.
int judge_again(const fs::path& pkg, const json& manifest, const VerifyCommand& cmd,
                const std::string& device, const fs::path& work) {
  std::error_code ec;
  fs::remove_all(work, ec);
  std::string backend = "triton";
  for (const auto& e : manifest["operators"]) {
    // A shared object is judged again from its source, built here with this toolchain.
    const bool native = e.value("kind", "triton") == "shared_object";
    const fs::path src = pkg / e.value(native ? "source_file" : "kernel_file", "");
    if (native) backend = src.extension() == ".cu" ? "cuda" : "cpu";
    const fs::path dst = work / "kernels" / e.value("operator", "") / ("kernel" + src.extension().string());
    fs::create_directories(dst.parent_path());
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  }
  EvalCommand ev;
  ev.suite = (pkg / manifest.value("cases_file", "cases/operators.txt")).parent_path().string();
  ev.backend = backend;
  ev.kernels = work / "kernels";
  ev.out = work / "eval";
  ev.device = device;
  ev.bench = cmd.bench;
  ev.reps = cmd.reps;
  ev.profiler = "none";
  return run_eval(ev);
}

}  // namespace

int run_library_verify(const VerifyCommand& cmd) {
  const fs::path pkg = cmd.dir / "kforge_backend";
  json manifest = json::parse(
      fs::is_regular_file(pkg / "manifest.json") ? read_file(pkg / "manifest.json") : "", nullptr, false);
  if (!manifest.is_object() || !manifest.contains("operators")) {
    std::cerr << "kforge library verify: " << cmd.dir.string() << ": no kforge_backend/manifest.json\n";
    return 2;
  }
  if (manifest.value("cases_file", json()).is_null() ||
      !fs::is_regular_file(pkg / manifest.value("cases_file", "cases/operators.txt"))) {
    std::cerr << "kforge library verify: the package carries no cases file (exported from a run without its "
                 "suite): nothing to judge against\n";
    return 2;
  }
  const std::string device = cmd.device.empty() ? manifest.value("device", "cpu") : cmd.device;
  const json hello = json::parse(hello_of(device), nullptr, false);
  if (!hello.is_object()) {
    std::cerr << "kforge library verify: kforge-runner did not start on " << device << "\n";
    return 3;
  }
  const json now = environment(device, hello);
  const json then = environment(manifest.value("device", "cpu"), manifest.value("toolchain", json::object()));
  const auto env_changes = environment_changes(then, now);
  const fs::path work = cmd.dir / ".kforge-verify";
  const int rc = judge_again(pkg, manifest, cmd, device, work);
  if (rc != 0 && rc != kExitInfraError) return rc;
  const auto got = verdicts(work / "eval");
  const std::string at = utc_now();
  int bad = 0, stale = 0, ok = 0;
  std::printf("\n%-34s %-10s %-18s %-18s %s\n", "operator", "kernel", "outcome now", "status", "reasons");
  for (auto& e : manifest["operators"]) {
    const std::string op = e.value("operator", "");
    std::vector<std::string> reasons;
    const fs::path file = pkg / e.value("kernel_file", "");
    const fs::path source = pkg / e.value("source_file", e.value("kernel_file", ""));
    const bool same =
        fs::is_regular_file(file) && sha256_hex(read_file(file)) == e.value("kernel_sha256", "") &&
        (!e.contains("source_sha256") ||
         (fs::is_regular_file(source) && sha256_hex(read_file(source)) == e.value("source_sha256", "")));
    if (!same) reasons.push_back("kernel file changed since export (SHA-256 differs from the manifest)");
    auto it = got.find(op);
    const std::string outcome = it == got.end() ? "not_judged" : it->second.value("outcome", "?");
    const std::string sub = it == got.end() ? "" : it->second.value("sub_kind", "");
    if (outcome != "pass") reasons.push_back("fails now: " + outcome + (sub.empty() ? "" : "/" + sub));
    for (const auto& c : env_changes) reasons.push_back("recorded on another environment: " + c);
    const std::string status = outcome != "pass" ? "failing"
                               : !same           ? "changed"
                               : reasons.empty() ? "ok"
                                                 : "stale_environment";
    (status == "ok" ? ok : status == "stale_environment" ? stale : bad)++;
    e["verify"] = {{"status", status},
                   {"reasons", reasons},
                   {"outcome", outcome},
                   {"sub_kind", sub},
                   {"speedup", it == got.end() ? 0.0 : it->second.value("speedup", 0.0)},
                   {"checked_at", at},
                   {"environment", now}};
    e["stale"] = status != "ok";
    std::printf("%-34s %-10s %-18s %-18s %s\n", op.c_str(), same ? "same" : "CHANGED",
                (outcome + (sub.empty() ? "" : "/" + sub)).c_str(), status.c_str(),
                reasons.empty() ? "-" : reasons.front().c_str());
  }
  manifest["verified"] = {
      {"at", at}, {"environment", now}, {"ok", ok}, {"stale_environment", stale}, {"bad", bad}};
  write_file(pkg / "manifest.json", dump_json(manifest, 2) + "\n");
  std::printf(
      "\nkforge library verify: %d ok, %d stale (environment), %d changed or failing; manifest updated: %s\n",
      ok, stale, bad, (pkg / "manifest.json").string().c_str());
  return bad > 0 ? 1 : 0;
}

}  // namespace kforge::agent
