#include "kforge/benchmarks/task.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "kforge/common/ascii.hpp"
#include "kforge/common/task_id.hpp"
#include "kforge/common/tolerance.hpp"
#include "kforge/common/util.hpp"

namespace fs = std::filesystem;

namespace kforge {

const std::vector<std::string>& known_categories() {
  static const std::vector<std::string> k{
      "activation", "broadcast",     "convolution", "full_architecture", "fusion", "loss",   "math",
      "matmul",     "normalization", "optimizer",   "pooling",           "index",  "resize", "reduce"};
  return k;
}

std::string category_of_folder(const std::string& folder) {
  if (folder == "arch") return "full_architecture";
  if (folder == "fuse") return "fusion";
  return folder;
}

std::string kernelbench_category(int level, const std::string& file_stem) {
  if (level == 2) return "fusion";
  if (level >= 3) return "full_architecture";
  const std::string n = ascii_lower(file_stem);
  auto has = [&](std::initializer_list<const char*> words) {
    for (const char* w : words)
      if (n.find(w) != std::string::npos) return true;
    return false;
  };
  // Order matters: "HingeLoss" before anything else, "conv_transposed" before "transposed".
  if (has({"loss"})) return "loss";
  if (has({"conv"})) return "convolution";
  if (has({"pool"})) return "pooling";
  if (has({"norm"})) return "normalization";
  if (has({"matmul", "matrix_multiplication", "matrix_vector", "matrix_scalar", "gemm", "gemv"}))
    return "matmul";
  if (has({"reduction", "argmax", "argmin"})) return "reduce";
  if (has({"cumsum", "cumprod"})) return "math";
  if (has({"relu", "sigmoid", "tanh", "softmax", "swish", "gelu", "selu", "elu", "softplus", "softsign"}))
    return "activation";
  return "";
}

const char* to_string(TaskFormat f) {
  switch (f) {
    case TaskFormat::kernelbench:
      return "kernelbench";
    case TaskFormat::tritonbench_t:
      return "tritonbench_t";
    case TaskFormat::tritonbench_g:
      return "tritonbench_g";
    case TaskFormat::aten_operator:
      return "aten_operator";
  }
  return "kernelbench";
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && a[i2] == '0') ++i2;  // leading zeros do not count
      while (j2 < b.size() && b[j2] == '0') ++j2;
      std::size_t ie = i2, je = j2;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      if (ie - i2 != je - j2) return ie - i2 < je - j2;
      if (int c = a.compare(i2, ie - i2, b, j2, je - j2); c != 0) return c < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;
}

Tolerance default_tolerance(const std::string& dtype) {
  const AtolRtol t = kernelbench_tolerance(dtype);
  return {t.atol, t.rtol};
}

Tolerance Task::tolerance_for(const std::string& dtype) const {
  if (auto it = tolerances.find(dtype); it != tolerances.end()) return it->second;
  if (auto it = tolerances.find("*"); it != tolerances.end()) return it->second;
  return default_tolerance(dtype);
}

std::string LoadError::to_string() const {
  std::string s = file.string();
  if (!field.empty()) s += ": " + field;
  return s + ": " + message;
}

const Task* Suite::find(const std::string& id) const {
  for (const auto& t : tasks)
    if (t.id == id) return &t;
  return nullptr;
}

TaskFileResult parse_task_file(const fs::path& file, const std::string& id) {
  TaskFileResult r;
  std::string src;
  try {
    src = read_file(file);
  } catch (const std::exception& e) {
    r.error = LoadError{file, "file", e.what()};
    return r;
  }
  static const std::regex kConst(R"(^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[A-Za-z_][\w\[\], ]*)?=\s*(.*?)\s*$)");
  static const std::regex kClass(R"(^class\s+Model\s*[\(:])");
  static const std::regex kInputs(R"(^def\s+get_inputs\s*\()");
  static const std::regex kInit(R"(^def\s+get_init_inputs\s*\()");
  bool has_class = false, has_inputs = false, has_init = false;
  Task t;
  t.id = id;
  t.file = fs::absolute(file);
  int lineno = 0;
  for (const auto& line : split_lines(src)) {
    ++lineno;
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '#') continue;
    if (std::regex_search(line, kClass)) has_class = true;
    if (std::regex_search(line, kInputs)) has_inputs = true;
    if (std::regex_search(line, kInit)) has_init = true;
    std::smatch m;
    if (std::regex_match(line, m, kConst)) {
      std::string expr = m[2].str();
      // Only one-line constants: skip ones that open a bracket they do not close.
      int depth = 0;
      for (char c : expr) depth += (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
      if (depth == 0 && !expr.empty() && expr != "\\") t.constants.push_back({m[1].str(), expr, lineno});
    }
  }
  if (!has_class) {
    r.error = LoadError{file, "class Model", "no top-level `class Model` in the task file"};
  } else if (!has_inputs) {
    r.error = LoadError{file, "get_inputs", "no top-level `def get_inputs()` in the task file"};
  } else if (!has_init) {
    r.error = LoadError{file, "get_init_inputs", "no top-level `def get_init_inputs()` in the task file"};
  } else {
    t.source = std::move(src);
    r.task = std::move(t);
  }
  return r;
}

}  // namespace kforge
