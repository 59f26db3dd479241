#include "kforge/backends/precision.hpp"

#include <algorithm>
#include <regex>

#include "kforge/backends/backend.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

std::string PrecisionReport::joined() const {
  std::string s;
  for (const auto& k : kinds) s += (s.empty() ? "" : ",") + k;
  return s;
}

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

bool inspects_precision(const std::string& backend) {
  return backend == "cuda";
}

PrecisionReport detect_precision(const std::filesystem::path& artifact, const std::string& backend) {
  PrecisionReport r;
  if (!inspects_precision(backend)) return r;  // cpu: no tensor-core instructions to find here
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

std::set<std::string> disallowed_precision(const std::set<std::string>& found,
                                           const std::set<std::string>& dtypes,
                                           const std::set<std::string>& allowed) {
  // Bits of the significand each kind computes with; a kind is below a dtype with more.
  auto bits = [](const std::string& k) {
    if (k == "float64") return 53;
    if (k == "float32") return 24;
    if (k == "tf32" || k == "float16" || k == "fp16") return 11;
    if (k == "bfloat16" || k == "bf16") return 8;
    return 0;  // fp8, fp4, int8, b1: below every floating dtype
  };
  int need = 0;
  bool half_task = false;
  for (const auto& d : dtypes) {
    if (d == "float64" || d == "float32" || d == "float16" || d == "bfloat16") need = std::max(need, bits(d));
    half_task = half_task || d == "bfloat16";
  }
  std::set<std::string> out;
  if (need == 0) return out;
  for (const auto& k : found) {
    if (allowed.count(k)) continue;
    bool below = bits(k) < need;
    // fp16 on a bfloat16 task: more significand bits but a far smaller range (overflow at 65504).
    if (half_task && need == 8 && k == "fp16") below = true;
    // tf32 on a float16 task keeps 10 explicit bits and fp32 range: not below.
    if (below) out.insert(k);
  }
  return out;
}

}  // namespace kforge::backends
