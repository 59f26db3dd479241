// The cuda backend's compiler messages (Backend::diagnostic_dialects, diagnostics.hpp): nvcc's
// front end (EDG) with its instantiation context lines, ptxas, and the CUDA tools' own lines
// (nvlink, the nvcc driver, fatbinary, cicc). The host pass (g++) and the linker are the core's.
#include "kforge/backends/cuda_diagnostics.hpp"

#include <cctype>
#include <regex>

#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace {

int to_int(const std::ssub_match& m) {
  return m.matched ? std::stoi(m.str()) : 0;
}

/// nvcc front end (EDG): file(line): severity[ #N[-D]]: message
bool edg(const std::string& line, Diagnostic& d) {
  static const std::regex re(
      R"(^(.*?)\(([0-9]+)\): (catastrophic error|error|warning|remark)(?: #[0-9]+(?:-[A-Z])?)?: (.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  d.file = m[1].str();
  d.line = to_int(m[2]);
  d.severity = severity_of(m[3].str());
  d.message = m[4].str();
  d.tool = "compiler";
  return true;
}

/// ptxas [file, line N; ]severity : message
bool ptxas(const std::string& line, Diagnostic& d) {
  static const std::regex re(R"(^ptxas(?: ([^,]*), line ([0-9]+);)? *(fatal|error|warning|info) *: (.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  d.severity = severity_of(m[3].str());
  d.message = m[4].str();
  d.tool = "ptxas";
  return true;
}

/// nvlink / the nvcc driver: tool severity : message
bool cuda_tool(const std::string& line, Diagnostic& d) {
  static const std::regex re(R"(^(nvlink|nvcc|fatbinary|cicc) *(fatal|error|warning|info) *: (.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, re)) return false;
  d.severity = severity_of(m[2].str());
  d.message = m[3].str();
  d.tool = m[1].str() == "nvlink" ? "nvlink" : "driver";
  return true;
}

/// EDG's context of the previous error: "          detected during instantiation of ...".
std::string edg_context(const std::string& line) {
  if (line.empty() || !std::isspace(static_cast<unsigned char>(line[0]))) return "";
  std::string t = trim(line);
  return starts_with(t, "detected during") || starts_with(t, "instantiation of") ? t : "";
}

}  // namespace

std::vector<DiagnosticDialect> cuda_diagnostic_dialects() {
  return {{edg, edg_context}, {ptxas, nullptr}, {cuda_tool, nullptr}};
}

}  // namespace kforge::backends
