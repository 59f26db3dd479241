#include "kforge/backends/backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "kforge/common/ascii.hpp"
#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

std::string_view to_string(ExtractError e) {
  switch (e) {
    case ExtractError::none:
      return "none";
    case ExtractError::no_code_block:
      return "no_code_block";
    case ExtractError::no_entry_point:
      return "no_entry_point";
  }
  return "none";
}

// ---------------------------------------------------------------------------------------------
// Fenced blocks

namespace {

/// If `line` opens/closes a fence, returns the fence char and length and the info string.
bool parse_fence(std::string_view line, char& ch, std::size_t& len, std::string_view& info) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  ch = line[i];
  std::size_t j = i;
  while (j < line.size() && line[j] == ch) ++j;
  len = j - i;
  if (len < 3) return false;
  info = line.substr(j);
  // CommonMark: a backtick fence's info string may not contain backticks (inline code).
  if (ch == '`' && info.find('`') != std::string_view::npos) return false;
  return true;
}

std::string info_language(std::string_view info) {
  auto t = trim(info);
  std::string_view v(t);
  // "{.cpp}" / "{cpp}" (pandoc style)
  while (!v.empty() && (v.front() == '{' || v.front() == '.')) v.remove_prefix(1);
  std::size_t end = 0;
  while (end < v.size() && !std::isspace(static_cast<unsigned char>(v[end])) && v[end] != '}' &&
         v[end] != ',')
    ++end;
  return ascii_lower(v.substr(0, end));
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// Source with comments, string and character literals replaced by spaces (newlines kept).
std::string strip_comments_and_literals(std::string_view s) {
  std::string out(s);
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') out[i++] = ' ';
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      out[i] = out[i + 1] = ' ';
      i += 2;
      while (i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/')) {
        if (s[i] != '\n') out[i] = ' ';
        ++i;
      }
      if (i < n) out[i] = out[i + 1] = ' ', i += 2;
    } else if (s[i] == '"' || s[i] == '\'') {
      // A digit separator (1'000) is not a character literal.
      if (s[i] == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1]))) {
        ++i;
        continue;
      }
      const char q = s[i];
      out[i++] = ' ';
      while (i < n && s[i] != q && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n) out[i++] = ' ';
        out[i++] = ' ';
      }
      if (i < n && s[i] == q) out[i++] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

}  // namespace

std::vector<FencedBlock> fenced_blocks(std::string_view text) {
  std::vector<FencedBlock> blocks;
  const auto lines = split_lines(text);
  bool in_block = false;
  char open_ch = 0;
  std::size_t open_len = 0;
  FencedBlock cur;
  for (const auto& line : lines) {
    char ch;
    std::size_t len;
    std::string_view info;
    const bool fence = parse_fence(line, ch, len, info);
    if (!in_block) {
      if (fence) {
        in_block = true;
        open_ch = ch;
        open_len = len;
        cur = FencedBlock{};
        cur.language = info_language(info);
      }
      continue;
    }
    if (fence && ch == open_ch && len >= open_len && trim(info).empty()) {
      blocks.push_back(std::move(cur));
      in_block = false;
      continue;
    }
    cur.body += line;
    cur.body += '\n';
  }
  if (in_block) {
    cur.closed = false;
    blocks.push_back(std::move(cur));
  }
  return blocks;
}

bool defines_function(std::string_view source, std::string_view name) {
  if (name.empty()) return false;
  const std::string s = strip_comments_and_literals(source);
  std::size_t pos = 0;
  while ((pos = s.find(name, pos)) != std::string::npos) {
    const std::size_t start = pos;
    pos += name.size();
    if (start > 0 && is_ident_char(s[start - 1])) continue;
    if (pos < s.size() && is_ident_char(s[pos])) continue;
    // What precedes the name must end a type: an identifier, '*', '&' or '>' (not '.', '(',
    // '=', ',' ... which mark a use inside an expression).
    std::size_t b = start;
    while (b > 0 && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    if (b == 0) continue;
    const char prev = s[b - 1];
    if (!(is_ident_char(prev) || prev == '*' || prev == '&' || prev == '>')) continue;
    // The preceding word must not be an expression keyword ("return kf_forward(...)").
    if (is_ident_char(prev)) {
      std::size_t w = b;
      while (w > 0 && is_ident_char(s[w - 1])) --w;
      const std::string_view word(s.data() + w, b - w);
      if (word == "return" || word == "case" || word == "throw" || word == "co_return" || word == "else" ||
          word == "do")
        continue;
    }
    std::size_t i = pos;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size() || s[i] != '(') continue;
    int depth = 0;
    for (; i < s.size(); ++i) {
      if (s[i] == '(')
        ++depth;
      else if (s[i] == ')' && --depth == 0)
        break;
    }
    if (i >= s.size()) continue;
    ++i;
    // After the parameter list: optional specifiers (noexcept, throw(), __attribute__((...)),
    // const, -> trailing type) then '{' for a definition.
    int pdepth = 0;
    for (; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '(')
        ++pdepth;
      else if (c == ')') {
        if (pdepth == 0) break;  // closing some enclosing expression: a call
        --pdepth;
      } else if (pdepth > 0) {
        continue;
      } else if (c == '{') {
        return true;
      } else if (c == ';' || c == ',' || c == '=' || c == '}' || c == '+' || c == '?' || c == '|' ||
                 c == '[') {
        break;
      }
    }
  }
  return false;
}

Extracted extract_fenced(std::string_view reply, const std::vector<std::string>& languages,
                         std::string_view entry_point) {
  Extracted r;
  const auto blocks = fenced_blocks(reply);
  std::vector<std::string> other_languages;
  const FencedBlock* chosen = nullptr;
  for (const auto& b : blocks) {
    if (std::find(languages.begin(), languages.end(), b.language) == languages.end()) {
      const std::string label = b.language.empty() ? "(untagged)" : b.language;
      if (std::find(other_languages.begin(), other_languages.end(), label) == other_languages.end())
        other_languages.push_back(label);
      continue;
    }
    ++r.blocks_seen;
    if (defines_function(b.body, entry_point)) chosen = &b;  // the last one wins
  }
  if (chosen) {
    r.ok = true;
    r.source = chosen->body;
    r.language = chosen->language;
    return r;
  }
  std::string accepted;
  for (const auto& l : languages) {
    if (l.empty()) continue;
    if (!accepted.empty()) accepted += ", ";
    accepted += "```" + l;
  }
  if (r.blocks_seen == 0) {
    r.error = ExtractError::no_code_block;
    r.message = "The reply contains no fenced code block (" + accepted + ")";
    if (!other_languages.empty()) {
      r.message += "; it has blocks in other languages:";
      for (const auto& l : other_languages) r.message += " " + l;
    }
    r.message += ".";
  } else {
    r.error = ExtractError::no_entry_point;
    r.message = "None of the " + std::to_string(r.blocks_seen) +
                " code block(s) in the reply defines the entry point `extern \"C\" int " +
                std::string(entry_point) +
                "(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, "
                "void* stream)`.";
  }
  return r;
}

Extracted Backend::extract(std::string_view reply_text) const {
  return extract_fenced(reply_text, fence_languages(), "kf_forward");
}

// ---------------------------------------------------------------------------------------------
// Toolchain discovery

std::optional<std::string> arch_from_compute_cap(std::string_view compute_cap) {
  const std::string t = trim(compute_cap);
  const auto dot = t.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= t.size()) return std::nullopt;
  const std::string major = t.substr(0, dot), minor = t.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  if (!digits(major) || !digits(minor)) return std::nullopt;
  if (major == "9" && minor == "0") return std::string("sm_90a");
  return "sm_" + major + minor;
}

std::optional<std::string> detect_cuda_arch() {
  static const std::optional<std::string> cached = []() -> std::optional<std::string> {
    const auto smi = find_executable("nvidia-smi");
    if (!smi) return std::nullopt;
    sandbox::Spec spec;
    spec.argv = {smi->string(), "--query-gpu=compute_cap", "--format=csv,noheader"};
    spec.limits.wall = std::chrono::milliseconds(20'000);
    // No user/network namespace: device files must look exactly as they do to the runner.
    spec.isolate_network = false;
    const auto res = sandbox::run(spec);
    if (!res.ok()) return std::nullopt;
    const auto lines = split_lines(res.out);
    if (lines.empty()) return std::nullopt;
    return arch_from_compute_cap(lines.front());
  }();
  return cached;
}

std::optional<fs::path> find_executable(std::string_view name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string_view::npos) {
    fs::path p(name);
    if (::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::string_view rest(path);
  while (true) {
    const auto colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    fs::path p = fs::path(dir.empty() ? "." : std::string(dir)) / std::string(name);
    std::error_code ec;
    if (::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p, ec)) return p;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return std::nullopt;
}

fs::path abi_include_dir(const CompileOptions& options) {
  if (!options.abi_dir.empty()) return options.abi_dir;
  return kforge_home() / "backends" / "abi";
}

// ---------------------------------------------------------------------------------------------
// Built-in backends

std::string Backend::default_device() const {
  return device_type() == "cpu" ? "cpu" : device_type() + ":0";
}

fs::path Backend::prompts_dir() const {
  return kforge_home() / "backends" / name() / "prompts";
}

// The built-in backends, one folder each (backends/<name>/): builtin_backends.inc is generated
// from backends/CMakeLists.txt's KFORGE_BACKENDS list, one KFORGE_BUILTIN_BACKEND(name) line per
// backend, whose folder defines make_<name>_backend().
#define KFORGE_BUILTIN_BACKEND(name) std::shared_ptr<const Backend> make_##name##_backend();
#include "builtin_backends.inc"
#undef KFORGE_BUILTIN_BACKEND

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Backend>, std::less<>> backends;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: backends outlive static destructors
    auto add = [reg](std::shared_ptr<const Backend> b) { reg->backends[b->name()] = std::move(b); };
#define KFORGE_BUILTIN_BACKEND(name) add(make_##name##_backend());
#include "builtin_backends.inc"
#undef KFORGE_BUILTIN_BACKEND
    return reg;
  }();
  return *r;
}

}  // namespace

void register_backend(std::shared_ptr<const Backend> backend) {
  if (!backend) throw std::invalid_argument("register_backend: null backend");
  const std::string n = backend->name();
  if (n.empty()) throw std::invalid_argument("register_backend: backend with an empty name");
  auto& reg = registry();
  std::lock_guard lock(reg.mu);
  if (reg.backends.count(n))
    throw std::invalid_argument("register_backend: backend '" + n + "' is already registered");
  reg.backends.emplace(n, std::move(backend));
}

const Backend* find_backend(std::string_view name) {
  auto& reg = registry();
  std::lock_guard lock(reg.mu);
  auto it = reg.backends.find(name);
  return it == reg.backends.end() ? nullptr : it->second.get();
}

const Backend& get_backend(std::string_view name) {
  if (const auto* b = find_backend(name)) return *b;
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> backend_names() {
  auto& reg = registry();
  std::lock_guard lock(reg.mu);
  std::vector<std::string> names;
  for (const auto& [n, b] : reg.backends) names.push_back(n);
  return names;
}

std::optional<fs::path> torch_python() {
  for (const auto& n : backend_names()) {
    const Backend* b = find_backend(n);
    if (b && b->artifact_kind() == ArtifactKind::python_module)
      if (auto p = b->find_compiler(CompileOptions{})) return p;
  }
  return std::nullopt;
}

}  // namespace kforge::backends
