// The cuda backend's precision inspection (cuda_precision.hpp): the tensor-core instructions of
// an artifact's SASS.
#include "kforge/backends/cuda_precision.hpp"

#include <algorithm>
#include <regex>

#include "kforge/backends/backend.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

PrecisionReport parse_sass_precision(std::string_view sass) {
  PrecisionReport r;
  r.inspected = true;
  // An opcode (optionally UTC-prefixed, optionally warpgroup G) of the MMA families, then its
  // dot-separated modifiers.
  static const std::regex kMma(R"((?:^|[^A-Za-z0-9_])((?:UTC)?([HIQOB])G?MMA)((?:\.[A-Za-z0-9_]+)*))");
  for (const auto& line : split_lines(std::string(sass))) {
    // Skip comments: the encoding in /* ... */ and header lines.
    std::string code = line;
    if (auto p = code.find("/*"); p != std::string::npos) {
      // the offset comment comes first ("/*0130*/  HMMA..."): keep what follows its end
      auto q = code.find("*/", p);
      if (p == code.find_first_not_of(" \t") && q != std::string::npos) code = code.substr(q + 2);
      if (auto c = code.find("/*"); c != std::string::npos) code = code.substr(0, c);
    }
    std::smatch m;
    std::string rest = code;
    while (std::regex_search(rest, m, kMma)) {
      const std::string op = m[1].str(), family = m[2].str(), mods = m[3].str() + ".";
      std::string kind;
      auto has = [&](const char* t) { return mods.find(std::string(".") + t + ".") != std::string::npos; };
      if (family == "H") {
        kind = has("TF32") ? "tf32" : has("BF16") ? "bf16" : (has("E4M3") || has("E5M2")) ? "fp8" : "fp16";
      } else if (family == "I") {
        kind = "int8";
      } else if (family == "Q") {
        kind = "fp8";
      } else if (family == "O") {
        kind = "fp4";
      } else if (family == "B") {
        kind = "b1";
      }
      if (!kind.empty()) {
        r.kinds.insert(kind);
        std::string sample = op + m[3].str();
        if (r.samples.size() < 8 && std::find(r.samples.begin(), r.samples.end(), sample) == r.samples.end())
          r.samples.push_back(sample);
      }
      rest = m.suffix().str();
    }
  }
  return r;
}

PrecisionReport sass_precision(const std::filesystem::path& artifact) {
  PrecisionReport r;
  auto tool = find_executable("cuobjdump");
  if (!tool) tool = find_executable("/usr/local/cuda/bin/cuobjdump");
  if (!tool) {
    r.error = "cuobjdump not found: the artifact's precision was not inspected";
    return r;
  }
  sandbox::Spec spec;
  spec.argv = {tool->string(), "-sass", artifact.string()};
  spec.limits.wall = std::chrono::milliseconds(60'000);
  spec.limits.output_cap_bytes = 64u << 20;
  sandbox::Result res = sandbox::run(spec);
  if (res.status != sandbox::Status::exited || res.exit_code != 0) {
    // An artifact without device code (nothing to disassemble) is not an error of the kernel.
    if (res.err.find("does not contain device code") != std::string::npos) {
      r.inspected = true;
      return r;
    }
    r.error = "cuobjdump -sass failed: " + truncate_middle(trim(res.err), 400);
    return r;
  }
  r = parse_sass_precision(res.out);
  if (res.out_truncated) r.error = "cuobjdump output was truncated; the report may be incomplete";
  return r;
}

}  // namespace kforge::backends
