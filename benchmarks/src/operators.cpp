// benchmarks/src/operators.cpp — BackendBench's trace format and operator tasks (operators.hpp).
#include "kforge/benchmarks/operators.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <regex>
#include <stdexcept>

#include "kforge/benchmarks/shapes.hpp"
#include "kforge/common/util.hpp"

namespace fs = std::filesystem;

namespace kforge {

namespace {

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out{""};
  for (char c : s) {
    if (c == '.')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

/// BackendBench's dtype abbreviations (utils.py dtype_abbrs) -> torch names and element sizes.
struct DtypeInfo {
  const char* torch_name;
  int bytes;
};
const std::map<std::string, DtypeInfo>& dtype_abbrs() {
  static const std::map<std::string, DtypeInfo> m{
      {"bf16", {"torch.bfloat16", 2}},    {"f64", {"torch.float64", 8}},   {"f32", {"torch.float32", 4}},
      {"f16", {"torch.float16", 2}},      {"c32", {"torch.complex32", 4}}, {"c64", {"torch.complex64", 8}},
      {"c128", {"torch.complex128", 16}}, {"i8", {"torch.int8", 1}},       {"i16", {"torch.int16", 2}},
      {"i32", {"torch.int32", 4}},        {"i64", {"torch.int64", 8}},     {"b8", {"torch.bool", 1}},
      {"u8", {"torch.uint8", 1}}};
  return m;
}

/// Recursive descent over one case's argument text. Errors throw ParseError inside, caught at
/// the top (parse_case_args) and returned as a value.
struct ParseError {
  std::string what;
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  OpValue value() {
    skip();
    if (at_end()) fail("unexpected end of text");
    char c = s_[i_];
    if (c == '(') return sequence('(', ')', OpValue::Kind::tuple);
    if (c == '[') return sequence('[', ']', OpValue::Kind::list);
    if (c == '{') return dict();
    if (c == '\'' || c == '"') return atom(string_literal());
    if (c == '-' || c == '+' || c == '.' || std::isdigit(static_cast<unsigned char>(c))) return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name();
    fail(std::string("unexpected character '") + c + "'");
  }

  void expect_end() {
    skip();
    if (!at_end()) fail("text after the arguments: '" + s_.substr(i_, 20) + "'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ParseError{why + " (at column " + std::to_string(i_ + 1) + ")"};
  }
  bool at_end() const { return i_ >= s_.size(); }
  void skip() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (!at_end() && s_[i_] == c) return ++i_, true;
    return false;
  }
  static OpValue atom(std::string text) {
    OpValue v;
    v.text = std::move(text);
    return v;
  }

  std::string string_literal() {
    const char q = s_[i_];
    std::size_t j = i_ + 1;
    while (j < s_.size() && s_[j] != q) j += s_[j] == '\\' ? 2 : 1;
    if (j >= s_.size()) fail("unterminated string");
    std::string out = s_.substr(i_, j + 1 - i_);
    i_ = j + 1;
    return out;
  }

  OpValue sequence(char open, char close, OpValue::Kind kind) {
    ++i_;
    OpValue v;
    v.kind = kind;
    (void)open;
    while (!eat(close)) {
      v.items.push_back(value());
      if (eat(close)) break;
      if (!eat(',')) fail(std::string("expected ',' or '") + close + "'");
    }
    return v;
  }

  OpValue dict() {
    ++i_;
    OpValue v;
    v.kind = OpValue::Kind::dict;
    while (!eat('}')) {
      skip();
      if (at_end() || (s_[i_] != '\'' && s_[i_] != '"')) fail("a keyword must be a quoted string");
      std::string k = string_literal();
      v.keys.push_back(k.substr(1, k.size() - 2));
      if (!eat(':')) fail("expected ':' after a keyword");
      v.items.push_back(value());
      if (eat('}')) break;
      if (!eat(',')) fail("expected ',' or '}'");
    }
    return v;
  }

  OpValue number() {
    static const std::regex kNum(R"(^[-+]?(inf|nan|(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?))");
    std::smatch m;
    std::string rest = s_.substr(i_);
    if (!std::regex_search(rest, m, kNum)) fail("not a number");
    std::string t = m.str();
    i_ += t.size();
    std::string sign = (t[0] == '-' || t[0] == '+') ? t.substr(0, 1) : "";
    std::string body = sign.empty() ? t : t.substr(1);
    if (body == "inf" || body == "nan") return atom(sign + "math." + body);
    return atom(t);
  }

  std::vector<std::int64_t> int_list() {
    OpValue l = value();
    if (l.kind != OpValue::Kind::list && l.kind != OpValue::Kind::tuple)
      fail("T(...): expected a list of sizes");
    std::vector<std::int64_t> out;
    for (const auto& x : l.items) {
      try {
        std::size_t used = 0;
        out.push_back(std::stoll(x.text, &used));
        if (used != x.text.size()) throw std::invalid_argument(x.text);
      } catch (const std::exception&) {
        fail("T(...): '" + x.text + "' is not an integer size");
      }
    }
    return out;
  }

  OpValue tensor() {  // after "T("
    OpValue v;
    v.kind = OpValue::Kind::tensor;
    v.shape = int_list();
    if (!eat(',')) fail("T(...): expected ', dtype'");
    skip();
    std::size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '\'')) ++j;
    std::string d = s_.substr(i_, j - i_);
    d.erase(std::remove(d.begin(), d.end(), '\''), d.end());
    if (!dtype_abbrs().count(d)) fail("T(...): unknown dtype '" + d + "'");
    v.dtype = d;
    i_ = j;
    if (eat(',')) {
      v.stride = int_list();
      if (v.stride.size() != v.shape.size()) fail("T(...): the stride has another rank than the size");
    }
    if (!eat(')')) fail("T(...): expected ')'");
    return v;
  }

  OpValue name() {
    std::size_t j = i_;
    while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_' || s_[j] == '.'))
      ++j;
    std::string n = s_.substr(i_, j - i_);
    i_ = j;
    if (n == "T" && eat('(')) return tensor();
    if (n == "inf" || n == "nan") return atom("math." + n);
    if (auto it = dtype_abbrs().find(n); it != dtype_abbrs().end()) return atom(it->second.torch_name);
    if (starts_with(n, "th.")) n = "torch." + n.substr(3);
    skip();
    if (!at_end() && s_[i_] == '(') {  // a call such as torch.device('cuda'): kept as written
      int depth = 0;
      std::size_t k = i_;
      for (; k < s_.size(); ++k) {
        depth += (s_[k] == '(') - (s_[k] == ')');
        if (depth == 0) break;
      }
      if (k >= s_.size()) fail("unbalanced '('");
      n += s_.substr(i_, k + 1 - i_);
      i_ = k + 1;
    }
    return atom(n);
  }

  const std::string& s_;
  std::size_t i_ = 0;
};

double value_bytes(const OpValue& v) {
  if (v.kind == OpValue::Kind::tensor) {
    double n = 1;
    for (auto d : v.shape) n *= static_cast<double>(d);
    return n * dtype_abbrs().at(v.dtype).bytes;
  }
  double b = 0;
  if (v.kind == OpValue::Kind::list || v.kind == OpValue::Kind::tuple)
    for (const auto& x : v.items) b += value_bytes(x);
  return b;
}

std::string int_list_text(const std::vector<std::int64_t>& xs) {
  std::string s = "[";
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

/// A value as a Python expression; tensors become the next parameter name (a0, a1, ...), strided
/// ones a view of it. `tensors` collects them in order (get_inputs() order).
std::string render(const OpValue& v, std::vector<const OpValue*>& tensors) {
  switch (v.kind) {
    case OpValue::Kind::tensor: {
      std::string n = "a" + std::to_string(tensors.size());
      tensors.push_back(&v);
      if (v.stride.empty()) return n;
      return n + ".as_strided(" + int_list_text(v.shape) + ", " + int_list_text(v.stride) + ")";
    }
    case OpValue::Kind::atom:
      return v.text;
    case OpValue::Kind::list:
    case OpValue::Kind::tuple: {
      std::string s = v.kind == OpValue::Kind::list ? "[" : "(";
      for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + render(v.items[i], tensors);
      if (v.kind == OpValue::Kind::tuple && v.items.size() == 1) s += ",";
      return s + (v.kind == OpValue::Kind::list ? "]" : ")");
    }
    case OpValue::Kind::dict: {
      std::string s = "{";
      for (std::size_t i = 0; i < v.items.size(); ++i)
        s += (i ? ", " : "") + ("'" + v.keys[i] + "': ") + render(v.items[i], tensors);
      return s + "}";
    }
  }
  return "None";
}

/// One case's call: "<fn>(a0, a1, alpha=2)"; appends its tensors.
std::string case_call(const std::string& fn, const OperatorCase& c, std::vector<const OpValue*>& tensors) {
  std::string s = fn + "(";
  bool first = true;
  for (const auto& a : c.positional) s += (first ? "" : ", ") + render(a, tensors), first = false;
  for (const auto& [k, a] : c.keyword) s += (first ? "" : ", ") + k + "=" + render(a, tensors), first = false;
  return s + ")";
}

/// The body shared by the reference's forward and the candidate's kf_forward.
std::string calls_body(const std::string& fn, const std::string& flat, const std::vector<OperatorCase>& cases,
                       std::string& params, std::vector<const OpValue*>& tensors) {
  std::string body = "        out = []\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    body += "        # case " + std::to_string(i) + " (line " + std::to_string(cases[i].line) + ", cnt " +
            std::to_string(cases[i].count) + ")\n";
    body += "        out += " + flat + "(" + case_call(fn, cases[i], tensors) + ")\n";
  }
  body += "        return tuple(out)\n";
  for (std::size_t i = 0; i < tensors.size(); ++i) params += ", a" + std::to_string(i);
  return body;
}

/// A value as the prompt's case table shows it: tensors by dtype, shape (and stride when given).
std::string describe(const OpValue& v) {
  switch (v.kind) {
    case OpValue::Kind::tensor:
      return v.dtype + int_list_text(v.shape) +
             (v.stride.empty() ? "" : " stride " + int_list_text(v.stride));
    case OpValue::Kind::atom:
      return v.text;
    case OpValue::Kind::list:
    case OpValue::Kind::tuple: {
      std::string s = v.kind == OpValue::Kind::list ? "[" : "(";
      for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + describe(v.items[i]);
      if (v.kind == OpValue::Kind::tuple && v.items.size() == 1) s += ",";
      return s + (v.kind == OpValue::Kind::list ? "]" : ")");
    }
    case OpValue::Kind::dict: {
      std::string s = "{";
      for (std::size_t i = 0; i < v.items.size(); ++i)
        s += (i ? ", " : "") + v.keys[i] + ": " + describe(v.items[i]);
      return s + "}";
    }
  }
  return "?";
}

/// An atom that is a plain non-negative integer literal ("768"), as the unseen rule changes.
bool is_int_text(const std::string& t) {
  return !t.empty() && t.size() < 19 &&
         std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

/// The value under the unseen-shape rule (unseen_size on sizes and integer literals).
OpValue unseen_value(const OpValue& v, bool* changed) {
  OpValue o = v;
  auto grow = [&](std::int64_t x) {
    const std::int64_t y = unseen_size(x);
    *changed = *changed || y != x;
    return y;
  };
  switch (v.kind) {
    case OpValue::Kind::tensor: {
      for (auto& d : o.shape) d = grow(d);
      if (!o.stride.empty()) o.stride = dense_strides_like(o.shape, v.stride);
      return o;
    }
    case OpValue::Kind::atom:
      if (is_int_text(v.text)) o.text = std::to_string(grow(std::stoll(v.text)));
      return o;
    default:
      for (auto& x : o.items) x = unseen_value(x, changed);
      return o;
  }
}

/// A value in BackendBench's trace syntax (parse_case_args reads it back).
std::string trace_value(const OpValue& v) {
  switch (v.kind) {
    case OpValue::Kind::tensor:
      return "T(" + int_list_text(v.shape) + ", " + v.dtype +
             (v.stride.empty() ? "" : ", " + int_list_text(v.stride)) + ")";
    case OpValue::Kind::atom:
      return v.text;
    case OpValue::Kind::list:
    case OpValue::Kind::tuple: {
      std::string s = v.kind == OpValue::Kind::list ? "[" : "(";
      for (std::size_t i = 0; i < v.items.size(); ++i) s += (i ? ", " : "") + trace_value(v.items[i]);
      if (v.kind == OpValue::Kind::tuple && v.items.size() == 1) s += ",";
      return s + (v.kind == OpValue::Kind::list ? "]" : ")");
    }
    case OpValue::Kind::dict: {
      std::string s = "{";
      for (std::size_t i = 0; i < v.items.size(); ++i)
        s += (i ? ", " : "") + ("'" + v.keys[i] + "': ") + trace_value(v.items[i]);
      return s + "}";
    }
  }
  return "None";
}

/// A C string literal.
std::string c_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

/// An integer atom as a C expression, or "" when the text is not a plain integer.
std::string c_int(const std::string& t) {
  const bool neg = !t.empty() && t[0] == '-';
  const std::string mag = neg ? t.substr(1) : t;
  if (!is_int_text(mag)) return "";
  return (neg ? "-" : "") + mag + "LL";
}

/// A floating atom as a C expression, or "".
std::string c_float(const std::string& t) {
  static const std::regex kNum(R"(^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$)");
  const bool neg = !t.empty() && t[0] == '-';
  const std::string mag = (neg || (!t.empty() && t[0] == '+')) ? t.substr(1) : t;
  if (mag == "math.inf") return neg ? "-__builtin_inf()" : "__builtin_inf()";
  if (mag == "math.nan") return "__builtin_nan(\"\")";
  return std::regex_match(t, kNum) ? t : "";
}

/// One case's call of the native entry: its tensor views, its kf_arg list.
struct NativeCall {
  std::string views;  ///< statements filling t[...]
  std::string lists;  ///< static int64_t arrays
  std::vector<std::string> args;
  int tensors = 0;
  int next_global = 0;
};

std::string native_tensor(const OpValue& v, NativeCall& c) {
  const int local = c.tensors++;
  const std::string t = "t[" + std::to_string(local) + "]";
  c.views += "    " + t + " = inputs[" + std::to_string(c.next_global++) + "];\n";
  if (!v.stride.empty()) {
    c.views += "    " + t + ".ndim = " + std::to_string(v.shape.size()) + ";\n";
    for (std::size_t k = 0; k < v.shape.size(); ++k)
      c.views += "    " + t + ".sizes[" + std::to_string(k) + "] = " + std::to_string(v.shape[k]) + "; " + t +
                 ".strides[" + std::to_string(k) + "] = " + std::to_string(v.stride[k]) + ";\n";
  }
  return std::to_string(local);
}

std::string native_arg(const OpValue& v, const std::string& name, NativeCall& c) {
  auto arg = [&](const char* kind, const std::string& tensor, const std::string& i, const std::string& f,
                 const std::string& n, const std::string& ints, const std::string& text) {
    return "{" + c_string(name) + ", " + kind + ", " + tensor + ", " + i + ", " + f + ", " + n + ", " + ints +
           ", " + text + "}";
  };
  if (v.kind == OpValue::Kind::tensor)
    return arg("KF_ARG_TENSOR", native_tensor(v, c), "0", "0.0", "0", "nullptr", "nullptr");
  if (v.kind == OpValue::Kind::atom) {
    if (v.text == "True" || v.text == "False")
      return arg("KF_ARG_BOOL", "0", v.text == "True" ? "1" : "0", "0.0", "0", "nullptr", "nullptr");
    if (v.text == "None") return arg("KF_ARG_NONE", "0", "0", "0.0", "0", "nullptr", "nullptr");
    if (auto i = c_int(v.text); !i.empty())
      return arg("KF_ARG_INT", "0", i, "0.0", "0", "nullptr", "nullptr");
    if (auto f = c_float(v.text); !f.empty())
      return arg("KF_ARG_FLOAT", "0", "0", f, "0", "nullptr", "nullptr");
  }
  if (v.kind == OpValue::Kind::list || v.kind == OpValue::Kind::tuple) {
    const bool ints = std::all_of(v.items.begin(), v.items.end(), [](const OpValue& x) {
      return x.kind == OpValue::Kind::atom && !c_int(x.text).empty();
    });
    const bool tensors =
        !v.items.empty() && std::all_of(v.items.begin(), v.items.end(),
                                        [](const OpValue& x) { return x.kind == OpValue::Kind::tensor; });
    if (ints || tensors) {
      const std::string l = "l" + std::to_string(c.args.size());
      std::string vals;
      for (const auto& x : v.items)
        vals += (vals.empty() ? "" : ", ") + (ints ? c_int(x.text) : native_tensor(x, c));
      c.lists += "    static const int64_t " + l + "[] = {" + (vals.empty() ? "0" : vals) + "};\n";
      return arg(ints ? "KF_ARG_INTS" : "KF_ARG_TENSORS", "0", "0", "0.0", std::to_string(v.items.size()), l,
                 "nullptr");
    }
  }
  // Anything else as its Python literal; tensors inside it still take their input slots.
  std::function<void(const OpValue&)> walk = [&](const OpValue& x) {
    if (x.kind == OpValue::Kind::tensor) native_tensor(x, c);
    for (const auto& y : x.items) walk(y);
  };
  walk(v);
  return arg("KF_ARG_OTHER", "0", "0", "0.0", "0", "nullptr", c_string(trace_value(v)));
}

}  // namespace

std::vector<std::int64_t> dense_strides_like(const std::vector<std::int64_t>& shape,
                                             const std::vector<std::int64_t>& stride) {
  std::vector<std::size_t> order(shape.size());  // innermost (smallest stride) first
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stride[a] != stride[b] ? stride[a] < stride[b] : a > b;
  });
  std::vector<std::int64_t> out(shape.size(), 0);
  std::int64_t step = 1;
  for (std::size_t i : order) {
    if (stride[i] == 0) continue;  // a broadcast (expanded) dimension stays one
    out[i] = step;
    step *= std::max<std::int64_t>(shape[i], 1);
  }
  return out;
}

std::string case_args_text(const OperatorCase& c) {
  OpValue pos;
  pos.kind = OpValue::Kind::tuple;
  pos.items = c.positional;
  OpValue kw;
  kw.kind = OpValue::Kind::dict;
  for (const auto& [k, v] : c.keyword) kw.keys.push_back(k), kw.items.push_back(v);
  std::string p = trace_value(pos);
  return "(" + p + ", " + trace_value(kw) + ")";
}

std::vector<OperatorCase> unseen_cases(const std::vector<OperatorCase>& cases, std::size_t* changed) {
  std::vector<OperatorCase> out;
  if (changed) *changed = 0;
  for (const auto& c : cases) {
    OperatorCase u = c;
    bool any = false;
    for (auto& v : u.positional) v = unseen_value(v, &any);
    for (auto& [k, v] : u.keyword) v = unseen_value(v, &any);
    u.args = case_args_text(u);
    if (any && changed) ++*changed;
    out.push_back(std::move(u));
  }
  return out;
}

std::string trace_text(const std::string& op, const std::vector<OperatorCase>& cases) {
  std::string s = "Operator: " + op + "\n";
  for (const auto& c : cases) s += "cnt: " + std::to_string(c.count) + ", " + c.args + "\n";
  return s;
}

std::string operator_cases_table(const std::vector<OperatorCase>& cases, std::size_t max_rows) {
  std::string s = "| case | trace line | cnt | arguments |\n|---|---|---|---|\n";
  for (std::size_t i = 0; i < cases.size() && i < max_rows; ++i) {
    const auto& c = cases[i];
    std::string args;
    for (const auto& a : c.positional) args += (args.empty() ? "" : ", ") + describe(a);
    for (const auto& [k, a] : c.keyword) args += (args.empty() ? "" : ", ") + k + "=" + describe(a);
    for (auto& ch : args)
      if (ch == '|') ch = '/';  // a table cell
    s += "| " + std::to_string(i) + " | " + std::to_string(c.line) + " | " + std::to_string(c.count) +
         " | `" + args + "` |\n";
  }
  if (cases.size() > max_rows)
    s += "| ... | | | " + std::to_string(cases.size() - max_rows) +
         " more case(s), in the reference module below |\n";
  return s;
}

double OperatorCase::input_bytes() const {
  double b = 0;
  for (const auto& v : positional) b += value_bytes(v);
  for (const auto& [k, v] : keyword) b += value_bytes(v);
  return b;
}

std::size_t TraceFile::cases() const {
  std::size_t n = 0;
  for (const auto& o : ops) n += o.cases.size();
  return n;
}

std::optional<std::string> parse_case_args(const std::string& text, OperatorCase& out) {
  try {
    Parser p(text);
    OpValue top = p.value();
    p.expect_end();
    if (top.kind != OpValue::Kind::tuple || top.items.size() != 2 ||
        (top.items[0].kind != OpValue::Kind::tuple && top.items[0].kind != OpValue::Kind::list) ||
        top.items[1].kind != OpValue::Kind::dict)
      return "expected ((positional arguments...), {keyword arguments})";
    out.positional = top.items[0].items;
    out.keyword.clear();
    for (std::size_t i = 0; i < top.items[1].keys.size(); ++i)
      out.keyword.emplace_back(top.items[1].keys[i], top.items[1].items[i]);
    return std::nullopt;
  } catch (const ParseError& e) {
    return e.what;
  }
}

TraceFile parse_trace(const std::string& text, const fs::path& file) {
  static const std::regex kOp(R"(^Operator: (.*?)\s*$)");
  static const std::regex kCnt(R"(^cnt: (\d+), (.*?)\s*$)");
  TraceFile t;
  std::map<std::string, std::size_t> index;
  TraceOperator* cur = nullptr;
  int lineno = 0;
  for (const auto& line : split_lines(text)) {
    ++lineno;
    const std::string where = "line " + std::to_string(lineno);
    if (trim(line).empty()) continue;
    std::smatch m;
    if (std::regex_match(line, m, kOp)) {
      std::string op = m[1].str();
      if (op == "aten.sum.SymInt") op = "aten.sum.dim_IntList";  // as BackendBench's data_loaders.py
      auto [it, fresh] = index.emplace(op, t.ops.size());
      if (fresh) t.ops.push_back({op, lineno, {}});
      cur = &t.ops[it->second];
    } else if (std::regex_match(line, m, kCnt)) {
      if (!cur) {
        t.errors.push_back({file, where, "a cnt: line before any Operator: line"});
        continue;
      }
      OperatorCase c;
      c.count = std::stoi(m[1].str());
      c.args = m[2].str();
      c.line = lineno;
      if (auto err = parse_case_args(c.args, c)) {
        t.errors.push_back({file, where, *err});
        continue;
      }
      cur->cases.push_back(std::move(c));
    } else {
      t.errors.push_back({file, where, "neither `Operator: <name>` nor `cnt: <N>, <args>`"});
    }
  }
  return t;
}

std::string operator_entry(const std::string& op) {
  auto parts = split_dots(op);
  std::string packet = parts.size() >= 2 ? parts[1] : op;
  if (starts_with(packet, "__")) {
    while (!packet.empty() && packet.front() == '_') packet.erase(0, 1);
    while (!packet.empty() && packet.back() == '_') packet.pop_back();
  }
  return packet + "_kernel_impl";
}

bool is_variant_overload(const std::string& op) {
  auto parts = split_dots(op);
  if (parts.size() < 2) return false;
  const std::string& packet = parts[1];
  const std::string overload = parts.size() >= 3 ? parts[2] : "";
  const bool inplace = packet.size() > 1 && packet.back() == '_' && !starts_with(packet, "__");
  const bool out =
      overload == "out" || (overload.size() > 4 && overload.substr(overload.size() - 4) == "_out");
  return inplace || out;
}

std::string operator_module_source(const std::string& op, const std::vector<OperatorCase>& cases,
                                   const std::string& origin) {
  std::vector<const OpValue*> tensors;
  std::string params;
  const std::string body = calls_body("OP", "_flat", cases, params, tensors);
  std::string s;
  s += "# " + op + ": " + std::to_string(cases.size()) + " case(s) from " + origin +
       " (BackendBench's trace format); generated by kforge.\n";
  s += "# Correct only if every case passes. The candidate defines " + operator_entry(op) +
       "(*args, **kwargs) with the operator's signature.\n";
  s += "import math\n\nimport torch\nfrom torch.testing import make_tensor\n\n";
  s += "OP = torch.ops." + op + "\n\n\n";
  s += "def _t(size, dtype, stride=None):\n";
  s += "    \"\"\"BackendBench's T(size, dtype[, stride]): make_tensor, floating values in [0, 1).\"\"\"\n";
  s += "    kw = dict(low=0, high=1) if dtype.is_floating_point else {}\n";
  s += "    if stride is None:\n";
  s += "        return make_tensor(size, dtype=dtype, device='cpu', **kw)\n";
  s += "    extent = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))\n";
  s += "    return make_tensor([extent], dtype=dtype, device='cpu', **kw)\n\n\n";
  s += "def _flat(y):\n    return list(y) if isinstance(y, (tuple, list)) else [y]\n\n\n";
  s += "class Model(torch.nn.Module):\n";
  s += "    def forward(self" + params + "):\n" + body + "\n\n";
  s += "def get_inputs():\n    return [\n";
  for (const auto* t : tensors) {
    s += "        _t(" + int_list_text(t->shape) + ", " + dtype_abbrs().at(t->dtype).torch_name;
    if (!t->stride.empty()) s += ", " + int_list_text(t->stride);
    s += "),\n";
  }
  s += "    ]\n\n\ndef get_init_inputs():\n    return []\n";
  return s;
}

const std::string& operator_adapter_marker() {
  static const std::string m =
      "# ---- kforge: the operator task's cases (appended by kforge, not the candidate's code) ----";
  return m;
}

std::string operator_adapter(const std::string& op, const std::vector<OperatorCase>& cases) {
  std::vector<const OpValue*> tensors;
  std::string params;
  std::string body = calls_body(operator_entry(op), "_kf_flat", cases, params, tensors);
  // The body is written for a method (8 spaces): a function's is 4.
  std::string fbody;
  for (const auto& l : split_lines(body)) fbody += (l.size() >= 4 ? l.substr(4) : l) + "\n";
  std::string s = "\n\n" + operator_adapter_marker() + "\n";
  s += "import math\n\nimport torch\n\n\n";
  s += "def _kf_flat(y):\n    return list(y) if isinstance(y, (tuple, list)) else [y]\n\n\n";
  s += "def kf_forward(" + (params.empty() ? std::string() : params.substr(2)) + "):\n" + fbody;
  return s;
}

const std::string& native_adapter_marker() {
  static const std::string m =
      "// ---- kforge: the operator task's cases (appended by kforge, not the candidate's code) ----";
  return m;
}

std::string operator_adapter_native(const std::string& op, const std::vector<OperatorCase>& cases) {
  const std::string entry = operator_entry(op);
  std::string s = "\n\n" + native_adapter_marker() + "\n";
  // A candidate's macros must not rewrite kforge's code: every name it uses is undefined first.
  for (const std::string& n : {std::string("kf_forward"),
                               entry,
                               std::string("kf_tensor"),
                               std::string("kf_arg"),
                               std::string("inputs"),
                               std::string("outputs"),
                               std::string("n_inputs"),
                               std::string("n_outputs"),
                               std::string("stream"),
                               std::string("per"),
                               std::string("rc"),
                               std::string("t"),
                               std::string("a"),
                               std::string("nullptr"),
                               std::string("__builtin_inf"),
                               std::string("__builtin_nan"),
                               std::string("KF_ARG_TENSOR"),
                               std::string("KF_ARG_INT"),
                               std::string("KF_ARG_FLOAT"),
                               std::string("KF_ARG_BOOL"),
                               std::string("KF_ARG_NONE"),
                               std::string("KF_ARG_INTS"),
                               std::string("KF_ARG_TENSORS"),
                               std::string("KF_ARG_OTHER")})
    s += "#undef " + n + "\n";
  for (std::size_t i = 0; i < 64; ++i) s += "#undef l" + std::to_string(i) + "\n";
  s += "#include \"kforge/kernel_abi.h\"\n\n";
  s += "extern \"C\" int " + entry +
       "(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, const kf_arg* args, "
       "int n_args, void* stream);\n\n";
  s +=
      "extern \"C\" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs, "
      "void* stream) {\n";
  std::string body;
  int global = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    NativeCall c;
    c.next_global = global;
    for (const auto& a : cases[i].positional) c.args.push_back(native_arg(a, "", c));
    for (const auto& [k, a] : cases[i].keyword) c.args.push_back(native_arg(a, k, c));
    global = c.next_global;
    body += "  {  // case " + std::to_string(i) + " (line " + std::to_string(cases[i].line) + ")\n";
    body += "    kf_tensor t[" + std::to_string(std::max(c.tensors, 1)) + "];\n" + c.views + c.lists;
    body += "    const kf_arg a[" + std::to_string(std::max<std::size_t>(c.args.size(), 1)) + "] = {";
    for (std::size_t k = 0; k < c.args.size(); ++k) body += (k ? ", " : "") + c.args[k];
    body += std::string(c.args.empty() ? "{}" : "") + "};\n";
    body += "    const int rc = " + entry + "(t, " + std::to_string(c.tensors) + ", outputs + " +
            std::to_string(i) + " * per, per, a, " + std::to_string(c.args.size()) + ", stream);\n";
    body += "    if (rc != 0) return rc;\n  }\n";
  }
  s += "  if (n_inputs != " + std::to_string(global) +
       ") return 90;  // the cases' tensors, in get_inputs() order\n";
  s += "  const int per = n_outputs / " + std::to_string(std::max<std::size_t>(cases.size(), 1)) +
       ";  // every case has the overload's outputs\n";
  s +=
      "  if (per * " + std::to_string(std::max<std::size_t>(cases.size(), 1)) + " != n_outputs) return 91;\n";
  s += body + "  return 0;\n}\n";
  return s;
}

Task operator_task(const TraceOperator& op, const fs::path& file) {
  Task t;
  t.format = TaskFormat::aten_operator;
  t.id = op.op;
  t.category = "operator";
  t.file = fs::absolute(file);
  t.aten_op = op.op;
  t.cases = op.cases;
  t.source = operator_module_source(op.op, op.cases, file.filename().string());
  t.entries = {operator_entry(op.op)};
  t.description = "ATen operator " + op.op + " on " + std::to_string(op.cases.size()) + " case(s)";
  for (const char* d : {"float32", "float16", "bfloat16", "float64", "complex64", "complex128"})
    t.tolerances[d] = {1e-2, 1e-2};  // BackendBench's allclose (eval.py): atol = rtol = 1e-2
  return t;
}

void load_operator_suite(Suite& s, const fs::path& trace) {
  TraceFile tf = parse_trace(read_file(trace), trace);
  s.skipped.insert(s.skipped.end(), tf.errors.begin(), tf.errors.end());
  std::size_t cases = 0;
  for (const auto& op : tf.ops) {
    if (op.cases.empty()) {
      s.skipped.push_back({trace, "line " + std::to_string(op.line), op.op + ": no cases"});
      continue;
    }
    if (is_variant_overload(op.op)) {
      s.notes.push_back(
          op.op + " (line " + std::to_string(op.line) +
          "): an in-place or out= variant, served by its functional overload as BackendBench's op "
          "map does; not a task of its own");
      continue;
    }
    cases += op.cases.size();
    s.tasks.push_back(operator_task(op, trace));
  }
  s.notes.push_back(std::to_string(s.tasks.size()) + " operator(s), " + std::to_string(cases) +
                    " case(s) from " + trace.string());
}

}  // namespace kforge
