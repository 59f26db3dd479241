#include "kforge/backends/triton_scan.hpp"

#include <nlohmann/json.hpp>

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

ScanResult infra(std::string why) {
  ScanResult r;
  r.outcome = Outcome::infra_error;
  r.error = std::move(why);
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

fs::path ast_scan_script() {
  return kforge_home() / "backends" / "triton" / "ast_scan.py";
}

ScanResult scan_triton_candidate(const fs::path& file, const ScanOptions& options) {
  const fs::path script = options.script.empty() ? ast_scan_script() : options.script;
  if (!fs::is_regular_file(script)) return infra("ast_scan script not found: " + script.string());
  std::string source;
  try {
    source = read_file(file);
  } catch (const std::exception& e) {
    return infra(std::string("cannot read the candidate: ") + e.what());
  }
  sandbox::Spec spec;
  // -I: isolated mode (no user site, no PYTHON* variables, the script's folder not on sys.path).
  spec.argv = {options.python, "-I", "-B", script.string(), fs::absolute(file).string()};
  spec.env_allow = {"PATH", "LANG", "LC_ALL"};
  spec.limits.wall = options.timeout;
  spec.limits.cpu_seconds = std::max<long>(1, static_cast<long>(options.timeout.count() / 1000));
  spec.limits.max_file_bytes = 1 << 20;
  spec.limits.output_cap_bytes = 4 << 20;
  const auto res = sandbox::run(spec);
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

}  // namespace kforge::backends
