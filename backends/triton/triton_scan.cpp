#include "kforge/backends/triton_scan.hpp"

#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace fs = std::filesystem;

namespace kforge::backends {

std::string ScanResult::sub_kind() const {
  if (outcome == Outcome::forbidden_api && !findings.empty()) return findings.front().rule;
  if (outcome == Outcome::compile_error) return "syntax";
  return "";
}

std::string ScanResult::summary(std::size_t max_findings, std::string_view source_name) const {
  std::string out;
  if (syntax_error) {
    out += std::string(source_name) + ":" + std::to_string(syntax_error->line) + ": " +
           syntax_error->headline + "\n";
    if (!syntax_error->source_line.empty()) out += "    " + syntax_error->source_line + "\n";
    return out;
  }
  for (std::size_t i = 0; i < findings.size() && i < max_findings; ++i) {
    const auto& f = findings[i];
    out += std::string(source_name) + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) +
           ": forbidden (" + f.rule + "): " + f.what + ": " + f.why + "\n";
    if (!f.source_line.empty()) out += "    " + f.source_line + "\n";
  }
  if (findings.size() > max_findings)
    out += "(" + std::to_string(findings.size() - max_findings) + " more findings)\n";
  return out;
}

namespace {

std::string line_of(const std::vector<std::string>& lines, int n) {
  return n >= 1 && n <= static_cast<int>(lines.size()) ? trim(lines[static_cast<std::size_t>(n - 1)]) : "";
}

/// The most a scan's reply may hold (bytes); more is the scan's infra_error.
constexpr std::size_t kReplyCap = 4 << 20;

long cpu_seconds_of(const ScanOptions& o) {
  return std::max<long>(1, static_cast<long>(o.timeout.count() / 1000));
}

ScanResult infra(std::string why) {
  ScanResult r;
  r.outcome = Outcome::infra_error;
  r.error = std::move(why);
  return r;
}

}  // namespace

namespace {

/// The scanner's reply, already parsed, for the candidate `source`.
ScanResult scan_result_of(const nlohmann::json& j, std::string_view source) {
  if (!j.is_object() || !j.contains("findings") || !j["findings"].is_array())
    return infra("ast_scan's reply has no `findings` array");
  const auto lines = split_lines(source);
  ScanResult r;
  if (j.contains("syntax_error") && j["syntax_error"].is_object()) {
    const auto& s = j["syntax_error"];
    PythonErrorVerdict v = classify_python_error(s.value("type", "SyntaxError"), s.value("message", ""));
    v.line = s.value("line", 0);
    v.source_line = line_of(lines, v.line);
    if (v.source_line.empty()) v.source_line = trim(s.value("text", ""));
    r.syntax_error = v;
    r.outcome = Outcome::compile_error;
    return r;
  }
  for (const auto& f : j["findings"]) {
    if (!f.is_object() || !f.contains("rule") || !f["rule"].is_string())
      return infra("ast_scan's reply has a finding without a `rule`");
    ScanFinding sf;
    sf.rule = f["rule"].get<std::string>();
    sf.line = f.value("line", 0);
    sf.column = f.value("col", 0);
    sf.what = f.value("what", "");
    sf.why = f.value("why", "");
    sf.source_line = line_of(lines, sf.line);
    r.findings.push_back(std::move(sf));
  }
  r.outcome = r.findings.empty() ? Outcome::pass : Outcome::forbidden_api;
  return r;
}

}  // namespace

ScanResult parse_scan_output(std::string_view json, std::string_view source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const std::exception& e) {
    return infra(std::string("ast_scan printed no JSON: ") + e.what());
  }
  return scan_result_of(j, source);
}

fs::path ast_scan_script() {
  return kforge_home() / "backends" / "triton" / "ast_scan.py";
}

namespace {

/// The sandbox's spec for the scanner: argv only, the allow-listed environment, no network,
/// rlimits; `extra` after the script (the candidate's path, or --serve and its CPU seconds).
sandbox::Spec scanner_spec(const ScanOptions& options, const fs::path& script,
                           std::vector<std::string> extra) {
  sandbox::Spec spec;
  // -I: isolated mode (no user site, no PYTHON* variables, the script's folder not on sys.path).
  spec.argv = {options.python, "-I", "-B", script.string()};
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  spec.env_allow = {"PATH", "LANG", "LC_ALL"};
  spec.limits.wall = options.timeout;
  spec.limits.cpu_seconds = cpu_seconds_of(options);
  spec.limits.max_file_bytes = 1 << 20;
  spec.limits.output_cap_bytes = kReplyCap;
  return spec;
}

ScanResult scan_cold(const fs::path& file, const std::string& source, const ScanOptions& options,
                     const fs::path& script) {
  const auto res = sandbox::run(scanner_spec(options, script, {fs::absolute(file).string()}));
  switch (res.status) {
    case sandbox::Status::failed_to_start:
      return infra("ast_scan could not start: " + res.error);
    case sandbox::Status::timed_out:
      return infra("ast_scan timed out after " + std::to_string(options.timeout.count()) + " ms");
    case sandbox::Status::signalled:
      return infra("ast_scan was killed by signal " + std::to_string(res.term_signal));
    case sandbox::Status::exited:
      break;
  }
  if (res.exit_code != 0)
    return infra("ast_scan exited with " + std::to_string(res.exit_code) + ": " +
                 truncate_middle(res.err, 2000));
  if (res.out_truncated) return infra("ast_scan's reply was cut at the output cap");
  return parse_scan_output(res.out, source);
}

/// Warm scanners (`ast_scan.py --serve`), idle ones kept per command line: each imported torch
/// and Triton once and forks a fresh child per scan, so a scan sees exactly what a cold
/// `ast_scan.py PATH` sees. A scanner serves one caller at a time (taken out of the pool for
/// the request); the pool grows to the number of concurrent scans. Thread-safe.
class WarmScanners {
 public:
  using Child = std::unique_ptr<sandbox::LineChild>;
  static WarmScanners& instance() {
    static WarmScanners pool;
    return pool;
  }
  /// An idle scanner of this command line, or a new one; either said "ready" within
  /// `timeout` (a prewarmed one says it at its first use); nullptr when none starts.
  Child take(const sandbox::Spec& spec, std::chrono::milliseconds timeout) {
    Idle found;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = idle_.begin(); it != idle_.end(); ++it)
        if (it->argv == spec.argv) {
          found = std::move(*it);
          idle_.erase(it);
          break;
        }
    }
    if (found.child && found.child->alive() && (found.ready || said_ready(*found.child, timeout)))
      return std::move(found.child);
    std::string err;
    Child c = sandbox::LineChild::start(spec, &err);
    return c && said_ready(*c, timeout) ? std::move(c) : nullptr;
  }
  void give(const std::vector<std::string>& argv, Child c) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back({argv, std::move(c), true});
  }
  /// Spawns scanners of this command line until the pool holds `count`; none is waited for.
  void prewarm(const sandbox::Spec& spec, int count) {
    std::lock_guard<std::mutex> lock(mu_);
    int have = 0;
    for (const auto& i : idle_) have += i.argv == spec.argv;
    for (; have < count; ++have) {
      std::string err;
      Child c = sandbox::LineChild::start(spec, &err);
      if (!c) return;
      idle_.push_back({spec.argv, std::move(c), false});
    }
  }

 private:
  struct Idle {
    std::vector<std::string> argv;
    Child child;
    bool ready = false;  ///< its "ready" was read (a prewarmed one's is still to come)
  };
  static bool said_ready(sandbox::LineChild& c, std::chrono::milliseconds timeout) {
    auto line = c.read_line(timeout);
    return line && *line == "ready";
  }
  std::mutex mu_;
  std::vector<Idle> idle_;
};

/// The warm scanner's spec: `--serve` and each scan's CPU seconds; the server itself lives on.
sandbox::Spec warm_spec(const ScanOptions& options, const fs::path& script) {
  auto spec = scanner_spec(options, script, {"--serve", std::to_string(cpu_seconds_of(options))});
  spec.limits.cpu_seconds = 0;  // the server lives on; each scan's child has the limit
  return spec;
}

/// The scan through a warm scanner: nullopt when the scanner failed for reasons of its own (it
/// did not start, died or answered out of protocol), and the caller scans cold instead; a time
/// over the limit is the scan's own infra_error, as it is cold.
std::optional<ScanResult> scan_warm(const fs::path& file, const std::string& source,
                                    const ScanOptions& options, const fs::path& script) {
  const auto spec = warm_spec(options, script);
  auto& pool = WarmScanners::instance();
  auto c = pool.take(spec, std::max(options.timeout, std::chrono::milliseconds(60'000)));
  if (!c || !c->write_line(fs::absolute(file).string())) return std::nullopt;
  const auto asked = std::chrono::steady_clock::now();
  auto reply = c->read_line(options.timeout);
  if (!reply) {
    // Out of time, or the scanner's end of file (it died; whether it is reaped yet is a race).
    const bool hung = std::chrono::steady_clock::now() - asked >= options.timeout;
    c->terminate();
    if (hung) return infra("ast_scan timed out after " + std::to_string(options.timeout.count()) + " ms");
    return std::nullopt;
  }
  if (reply->size() > kReplyCap) return infra("ast_scan's reply was cut at the output cap");
  nlohmann::json j = nlohmann::json::parse(*reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  pool.give(spec.argv, std::move(c));
  if (j.contains("error")) return infra("ast_scan: " + j["error"].dump());
  return scan_result_of(j, source);
}

}  // namespace

ScanResult scan_triton_candidate(const fs::path& file, const ScanOptions& options) {
  const fs::path script = options.script.empty() ? ast_scan_script() : options.script;
  if (!fs::is_regular_file(script)) return infra("ast_scan script not found: " + script.string());
  std::string source;
  try {
    source = read_file(file);
  } catch (const std::exception& e) {
    return infra(std::string("cannot read the candidate: ") + e.what());
  }
  if (options.warm && fs::absolute(file).string().find('\n') == std::string::npos)  // one line per request
    if (auto r = scan_warm(file, source, options, script)) return *r;
  return scan_cold(file, source, options, script);
}

void prewarm_triton_scanners(int count, const ScanOptions& options) {
  const fs::path script = options.script.empty() ? ast_scan_script() : options.script;
  if (!options.warm || count <= 0 || !fs::is_regular_file(script)) return;
  WarmScanners::instance().prewarm(warm_spec(options, script), count);
}

}  // namespace kforge::backends
