#include "kforge/benchmarks/shapes.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "kforge/benchmarks/task.hpp"
#include "kforge/common/dtype.hpp"
#include "kforge/common/util.hpp"

namespace kforge {

namespace {

/// An evaluated value: an integer or a tuple of integers.
struct Value {
  bool tuple = false;
  std::vector<std::int64_t> v;  ///< one element when not a tuple
};
using Env = std::map<std::string, Value>;

/// Recursive-descent evaluator of Python integer expressions (above). Any other construct
/// (floats, calls, attributes) fails: std::nullopt.
class Eval {
 public:
  Eval(const std::string& s, const Env& env) : s_(s), env_(env) {}

  std::optional<Value> all() {
    auto v = list(true);
    skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }
  /// Identifiers the expression names (for the dependency closure).
  static std::set<std::string> names(const std::string& s) {
    static const std::regex kName(R"([A-Za-z_][A-Za-z0-9_]*)");
    std::set<std::string> out;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), kName); it != std::sregex_iterator(); ++it)
      out.insert(it->str());
    return out;
  }

 private:
  const std::string& s_;
  const Env& env_;
  std::size_t i_ = 0;

  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const char* tok) {
    skip();
    std::size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    i_ += n;
    return true;
  }
  /// expr (',' expr)* — a tuple when a comma appears (a bare tuple only at top level or in brackets).
  std::optional<Value> list(bool allow_tuple) {
    auto first = expr();
    if (!first) return std::nullopt;
    skip();
    if (!allow_tuple || i_ >= s_.size() || s_[i_] != ',') return first;
    Value t{true, {}};
    auto add = [&](const Value& x) { t.v.insert(t.v.end(), x.v.begin(), x.v.end()); };
    if (first->tuple) return std::nullopt;
    add(*first);
    while (eat(",")) {
      skip();
      if (i_ >= s_.size() || s_[i_] == ')' || s_[i_] == ']') break;  // trailing comma
      bool star = eat("*");
      auto x = expr();
      if (!x || x->tuple != star) return std::nullopt;
      add(*x);
    }
    return t;
  }
  std::optional<Value> expr() {
    auto a = term();
    while (a && !a->tuple) {
      if (eat("+")) {
        auto b = term();
        if (!b || b->tuple) return std::nullopt;
        a->v[0] += b->v[0];
      } else if (eat("-")) {
        auto b = term();
        if (!b || b->tuple) return std::nullopt;
        a->v[0] -= b->v[0];
      } else {
        break;
      }
    }
    return a;
  }
  std::optional<Value> term() {
    auto a = power();
    while (a && !a->tuple) {
      skip();
      if (s_.compare(i_, 2, "**") == 0) break;
      const bool floordiv = eat("//");
      const bool mul = !floordiv && eat("*");
      const bool mod = !floordiv && !mul && eat("%");
      if (!floordiv && !mul && !mod) break;
      auto b = power();
      if (!b || b->tuple) return std::nullopt;
      if ((floordiv || mod) && b->v[0] == 0) return std::nullopt;
      if (mul) a->v[0] *= b->v[0];
      if (floordiv) a->v[0] = a->v[0] / b->v[0];  // sizes are positive: floor == truncation
      if (mod) a->v[0] %= b->v[0];
    }
    return a;
  }
  std::optional<Value> power() {
    auto a = unary();
    if (a && !a->tuple && eat("**")) {
      auto b = unary();
      if (!b || b->tuple || b->v[0] < 0 || b->v[0] > 62) return std::nullopt;
      std::int64_t r = 1;
      for (std::int64_t k = 0; k < b->v[0]; ++k) r *= a->v[0];
      a->v[0] = r;
    }
    return a;
  }
  std::optional<Value> unary() {
    if (eat("-")) {
      auto a = unary();
      if (!a || a->tuple) return std::nullopt;
      a->v[0] = -a->v[0];
      return a;
    }
    return atom();
  }
  std::optional<Value> atom() {
    skip();
    if (i_ >= s_.size()) return std::nullopt;
    if (eat("(") || eat("[")) {
      const char close = s_[i_ - 1] == '(' ? ')' : ']';
      skip();
      if (i_ < s_.size() && s_[i_] == close) {  // () : the empty tuple
        ++i_;
        return Value{true, {}};
      }
      auto v = list(true);
      skip();
      if (!v || i_ >= s_.size() || s_[i_] != close) return std::nullopt;
      ++i_;
      if (close == ']') v->tuple = true;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      std::size_t b = i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      if (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E')) return std::nullopt;
      std::string digits;
      for (std::size_t k = b; k < i_; ++k)
        if (s_[k] != '_') digits += s_[k];
      if (digits.size() > 18) return std::nullopt;
      return Value{false, {std::stoll(digits)}};
    }
    if (std::isalpha(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_') {
      std::size_t b = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      auto it = env_.find(s_.substr(b, i_ - b));
      if (it == env_.end()) return std::nullopt;
      skip();
      if (i_ < s_.size() && (s_[i_] == '(' || s_[i_] == '.')) return std::nullopt;  // a call or attribute
      return it->second;
    }
    return std::nullopt;
  }
};

std::optional<Value> eval(const std::string& expr, const Env& env) {
  return Eval(expr, env).all();
}

/// Arguments of a call whose '(' is at s[open]: split at top-level commas; the index past ')'.
std::vector<std::string> call_args(const std::string& s, std::size_t open, std::size_t* end) {
  std::vector<std::string> args;
  std::string cur;
  int depth = 0;
  for (std::size_t i = open + 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) {
        if (!trim(cur).empty()) args.push_back(trim(cur));
        *end = i + 1;
        return args;
      }
      --depth;
    }
    if (c == ',' && depth == 0) {
      args.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  *end = std::string::npos;
  return {};
}

/// A module-level assignment of literal integers (no names on the right: "4096", "2048 * 2"),
/// what the scaling rule may change: `n = 4096`, chained `h = w = 256` (one value for every
/// name), or unpacked `d, h, w = 16, 32, 32` (one value per name).
struct Literal {
  std::vector<std::string> names;
  std::vector<std::int64_t> values;  ///< one per name when unpacked, else one
  bool unpacked = false;
  int line = 0;  ///< 0-based
};

/// The module constants evaluated in file order (those that evaluate), and get_inputs' body.
struct Parsed {
  Env env;
  std::map<std::string, std::string> exprs;  ///< every module constant's expression
  std::vector<Literal> literals;
  std::vector<std::string> body;  ///< get_inputs' lines
};

/// Reads one top-level assignment into `p` (when it is one).
void parse_assignment(const std::string& line, int n, Parsed& p) {
  static const std::regex kAssign(
      R"(^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?::\s*[A-Za-z_][\w\[\], ]*)?=(?!=)\s*(.*?)\s*$)");
  static const std::regex kChain(R"(^([A-Za-z_]\w*)\s*=(?!=)\s*(.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, kAssign)) return;
  Literal lit;
  lit.line = n;
  std::string expr = m[2].str();
  for (auto& name : [&] {
         std::vector<std::string> v;
         std::stringstream ss(m[1].str());
         for (std::string x; std::getline(ss, x, ',');) v.push_back(trim(x));
         return v;
       }())
    lit.names.push_back(name);
  lit.unpacked = lit.names.size() > 1;
  while (!lit.unpacked && std::regex_match(expr, m, kChain)) {  // h = w = 256
    lit.names.push_back(m[1].str());
    expr = m[2].str();
  }
  const auto v = eval(expr, p.env);
  if (lit.unpacked && (!v || !v->tuple || v->v.size() != lit.names.size())) return;
  for (std::size_t i = 0; i < lit.names.size(); ++i) {
    p.exprs[lit.names[i]] = expr;
    if (v) p.env[lit.names[i]] = lit.unpacked ? Value{false, {v->v[i]}} : *v;
  }
  if (!v || (v->tuple && !lit.unpacked) || !Eval::names(expr).empty()) return;
  lit.values = v->v;
  p.literals.push_back(std::move(lit));
}

Parsed parse(const std::string& source) {
  Parsed p;
  bool in_inputs = false;
  const auto lines = split_lines(source);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string line = lines[n];
    if (auto h = line.find('#'); h != std::string::npos) line = line.substr(0, h);
    if (trim(line).empty()) continue;
    const bool top = line[0] != ' ' && line[0] != '\t';
    if (top) in_inputs = starts_with(line, "def get_inputs");
    if (in_inputs && !top) p.body.push_back(trim(line));
    if (top) parse_assignment(line, static_cast<int>(n), p);
  }
  return p;
}

/// One tensor from a torch factory call's arguments, or nullopt.
std::optional<InputShape> shape_of_call(const std::string& fn, const std::vector<std::string>& args,
                                        const Env& env) {
  std::vector<std::string> pos;
  InputShape sh;
  std::string size_kw;
  for (const auto& a : args) {
    static const std::regex kKw(R"(^([A-Za-z_]\w*)\s*=\s*(.*)$)");
    std::smatch m;
    if (std::regex_match(a, m, kKw)) {
      if (m[1] == "dtype") {
        std::string d = trim(m[2].str());
        if (starts_with(d, "torch.")) d = d.substr(6);
        sh.dtype = d;
      } else if (m[1] == "size") {
        size_kw = m[2].str();
      }
      continue;
    }
    pos.push_back(a);
  }
  if (fn == "randint") {
    if (sh.dtype == "float32") sh.dtype = "int64";
    if (size_kw.empty() && !pos.empty()) size_kw = pos.back();
    pos.clear();
  } else if (fn == "full") {
    if (pos.empty()) return std::nullopt;
    pos.resize(1);  // the fill value follows the size
  }
  if (!size_kw.empty()) pos = {size_kw};
  sh.elem_bytes = dtype_bytes(sh.dtype);
  for (const auto& a : pos) {
    const bool star = starts_with(a, "*");
    auto v = eval(star ? a.substr(1) : a, env);
    if (!v || (star && !v->tuple)) return std::nullopt;
    if (v->tuple && pos.size() > 1 && !star) return std::nullopt;
    sh.dims.insert(sh.dims.end(), v->v.begin(), v->v.end());
  }
  for (auto d : sh.dims)
    if (d < 0) return std::nullopt;
  return sh;
}

ShapeEstimate estimate(const Parsed& p) {
  ShapeEstimate e;
  if (p.body.empty()) {
    e.note = "no get_inputs() body";
    return e;
  }
  Env env = p.env;
  static const std::regex kLocal(R"(^([A-Za-z_]\w*)\s*=\s*(.*)$)");
  static const std::regex kCall(R"(torch\.(randn|rand|randint|zeros|ones|empty|full)\s*\()");
  for (const auto& line : p.body) {
    std::smatch m;
    if (std::regex_match(line, m, kLocal) && m[2].str().find("torch.") == std::string::npos)
      if (auto v = eval(m[2].str(), env)) env[m[1].str()] = *v;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kCall); it != std::sregex_iterator();
         ++it) {
      std::size_t end = 0;
      const std::size_t open = static_cast<std::size_t>(it->position(0) + it->length(0)) - 1;
      auto args = call_args(line, open, &end);
      auto sh = end == std::string::npos ? std::nullopt : shape_of_call((*it)[1].str(), args, env);
      if (!sh) {
        e.note = "shape not understood: " + line;
        return e;
      }
      e.inputs.push_back(*sh);
    }
  }
  if (e.inputs.empty()) {
    e.note = "no torch.randn/rand/randint/zeros/ones/empty/full call in get_inputs()";
    return e;
  }
  e.ok = true;
  for (const auto& s : e.inputs) e.bytes += s.bytes();
  return e;
}

/// Names that get_inputs() uses, directly or through other constants and its locals.
std::set<std::string> used_names(const Parsed& p) {
  std::set<std::string> todo, seen;
  for (const auto& l : p.body)
    for (const auto& n : Eval::names(l)) todo.insert(n);
  while (!todo.empty()) {
    std::string n = *todo.begin();
    todo.erase(todo.begin());
    if (!seen.insert(n).second) continue;
    if (auto it = p.exprs.find(n); it != p.exprs.end())
      for (const auto& d : Eval::names(it->second)) todo.insert(d);
  }
  return seen;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

/// The source with each used literal >= 16 changed (scaling: divided by f, kept >= 16), its lines rewritten
/// as `NAME = VALUE  # profile P`; the changes listed ("n 4096->32"). Nothing to change: nullopt.
std::optional<std::string> rewritten_source(const std::string& source, const Parsed& p,
                                            const std::set<std::string>& used,
                                            const std::function<std::int64_t(std::int64_t)>& change,
                                            const std::string& profile, std::vector<std::string>* changes) {
  auto lines = split_lines(source);
  changes->clear();
  for (const auto& lit : p.literals) {
    std::vector<std::string> vals;
    bool changed = false;
    for (std::size_t i = 0; i < lit.values.size(); ++i) {
      const bool is_used = lit.unpacked
                               ? used.count(lit.names[i]) > 0
                               : std::any_of(lit.names.begin(), lit.names.end(),
                                             [&](const std::string& n) { return used.count(n) > 0; });
      std::int64_t v = lit.values[i];
      if (is_used && v >= 16) v = change(v);
      if (v != lit.values[i]) {
        changed = true;
        changes->push_back((lit.unpacked ? lit.names[i] : joined(lit.names, " = ")) + " " +
                           std::to_string(lit.values[i]) + "->" + std::to_string(v));
      }
      vals.push_back(std::to_string(v));
    }
    if (!changed) continue;
    lines[static_cast<std::size_t>(lit.line)] = joined(lit.names, lit.unpacked ? ", " : " = ") + " = " +
                                                joined(vals, ", ") + "  # profile " + profile;
  }
  if (changes->empty()) return std::nullopt;
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

double InputShape::bytes() const {
  double n = static_cast<double>(elem_bytes);
  for (auto d : dims) n *= static_cast<double>(d);
  return n;
}

std::string ShapeEstimate::describe() const {
  if (!ok) return note;
  std::string s;
  for (const auto& in : inputs) {
    if (!s.empty()) s += "; ";
    s += "(";
    for (std::size_t i = 0; i < in.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(in.dims[i]);
    s += in.dims.size() == 1 ? ",) " : ") ";
    s += in.dtype;
  }
  return s;
}

ShapeEstimate estimate_inputs(const std::string& source) {
  return estimate(parse(source));
}

std::optional<double> profile_target_bytes(const std::string& profile) {
  if (profile == "ci") return 1024.0 * 1024.0;
  if (profile == "small") return 64.0 * 1024.0 * 1024.0;
  return std::nullopt;
}

std::optional<ScaledProfile> scale_profile(const std::string& source, const std::string& profile) {
  const auto target = profile_target_bytes(profile);
  if (!target) return std::nullopt;
  return scale_to_bytes(source, *target, profile);
}

std::optional<ScaledProfile> scale_to_bytes(const std::string& source, double target_bytes,
                                            const std::string& profile) {
  const Parsed p = parse(source);
  ScaledProfile sp;
  sp.before = estimate(p);
  if (!sp.before.ok) return std::nullopt;
  sp.after = sp.before;
  sp.source = source;
  const auto used = used_names(p);
  std::vector<std::string> changes;
  for (std::int64_t f = 2; sp.after.bytes > target_bytes && f <= (std::int64_t{1} << 24); f *= 2) {
    auto src = rewritten_source(
        source, p, used, [f](std::int64_t v) { return std::max<std::int64_t>(16, v / f); }, profile,
        &changes);
    if (!src || *src == sp.source) break;  // nothing (more) to shrink: every constant at 16
    ShapeEstimate e = estimate_inputs(*src);
    if (!e.ok) break;
    sp.source = std::move(*src);
    sp.changes = changes;
    sp.factor = f;
    sp.after = std::move(e);
  }
  if (sp.after.bytes > target_bytes) {
    char b[160];
    std::snprintf(b, sizeof b,
                  "the target (%.0f KiB) is not reached: no constant of get_inputs() can shrink further",
                  target_bytes / 1024);
    sp.note = b;
  }
  return sp;
}

std::optional<ScaledProfile> unseen_profile(const std::string& source) {
  const Parsed p = parse(source);
  ScaledProfile sp;
  sp.before = estimate(p);
  if (!sp.before.ok) return std::nullopt;
  auto src = rewritten_source(
      source, p, used_names(p), [](std::int64_t v) { return unseen_size(v); }, "unseen", &sp.changes);
  if (!src) return std::nullopt;
  sp.after = estimate_inputs(*src);
  if (!sp.after.ok) return std::nullopt;
  sp.source = std::move(*src);
  return sp;
}

std::int64_t unseen_size(std::int64_t v) {
  return v >= 16 && v < (std::int64_t{1} << 31) ? v + 7 : v;
}

std::optional<std::string> unseen_base(const std::string& profile) {
  static const std::string kSuffix = "+unseen";
  if (profile == "unseen") return std::string("default");
  if (profile.size() > kSuffix.size() &&
      profile.compare(profile.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
    return profile.substr(0, profile.size() - kSuffix.size());
  return std::nullopt;
}

bool has_profile(const Task& task, const std::string& profile) {
  if (profile.empty() || profile == "default" || task.profiles.count(profile)) return true;
  if (auto base = unseen_base(profile)) {
    if (!has_profile(task, *base)) return false;
    auto src = apply_profile(task, *base);
    return src && unseen_profile(*src).has_value();
  }
  return scale_profile(task.source, profile).has_value();
}

}  // namespace kforge
