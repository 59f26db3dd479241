#include "kforge/backends/python_errors.hpp"

#include <algorithm>
#include <regex>

#include "kforge/common/ascii.hpp"
#include "kforge/common/util.hpp"

namespace kforge::backends {

std::string_view to_string(PythonErrorGroup g) {
  switch (g) {
    case PythonErrorGroup::syntax:
      return "Syntax";
    case PythonErrorGroup::attr_type:
      return "Attr&Type";
    case PythonErrorGroup::name_ref:
      return "Name&Ref";
    case PythonErrorGroup::run_logic:
      return "Run&Logic";
    case PythonErrorGroup::other:
      return "Other";
  }
  return "Other";
}

std::string PythonErrorVerdict::sub_kind() const {
  if (compile_kind) return std::string(to_string(*compile_kind));
  if (runtime_kind) return std::string(to_string(*runtime_kind));
  if (mismatch_kind) return std::string(to_string(*mismatch_kind));
  return "";
}

namespace {

std::string short_name(std::string_view type) {
  auto dot = type.rfind('.');
  return std::string(dot == std::string_view::npos ? type : type.substr(dot + 1));
}

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Mapping {
  Outcome outcome;
  std::optional<CompileErrorKind> compile;
  std::optional<RuntimeErrorKind> runtime;
  PythonErrorGroup group;
};

// The table of appendix D plus kforge's outcomes; std::nullopt for a type it does not name.
std::optional<Mapping> mapping_of(const std::string& t) {
  using G = PythonErrorGroup;
  using C = CompileErrorKind;
  using R = RuntimeErrorKind;
  const auto ce = [](C k, G g) { return Mapping{Outcome::compile_error, k, std::nullopt, g}; };
  const auto re = [](R k, G g) { return Mapping{Outcome::runtime_error, std::nullopt, k, g}; };
  if (t == "SyntaxError" || t == "IndentationError" || t == "TabError") return ce(C::syntax, G::syntax);
  if (t == "NameError" || t == "UnboundLocalError") return ce(C::undeclared, G::name_ref);
  if (t == "AttributeError") return ce(C::no_member, G::attr_type);
  if (t == "TypeError") return ce(C::type_mismatch, G::attr_type);
  if (t == "ImportError" || t == "ModuleNotFoundError") return ce(C::missing_include, G::name_ref);
  if (t == "NotImplementedError") return re(R::python_exception, G::attr_type);
  if (t == "KeyError" || t == "IndexError") return re(R::python_exception, G::name_ref);
  if (t == "ValueError" || t == "ZeroDivisionError" || t == "RecursionError" || t == "AssertionError")
    return re(R::python_exception, G::run_logic);
  if (t == "RuntimeError" || t == "AcceleratorError") return re(R::python_exception, G::run_logic);
  if (t == "OutOfMemoryError") return re(R::out_of_memory, G::run_logic);  // torch(.cuda).OutOfMemoryError
  if (t == "MemoryError") return re(R::out_of_memory, G::other);
  if (t == "OutOfResources") return re(R::invalid_launch, G::run_logic);  // triton: shared memory, registers
  if (t == "ResultsError") return Mapping{Outcome::output_mismatch, std::nullopt, std::nullopt, G::run_logic};
  if (t == "SystemExit") return re(R::exit, G::other);
  if (t == "KeyboardInterrupt") return re(R::signal, G::other);
  if (t == "PermissionError") return re(R::sandbox, G::other);  // the confinement refused a file or call
  return std::nullopt;
}

bool is_compilation_error(const std::string& t) {
  return t == "CompilationError" || t == "CompileTimeAssertionFailure" || t == "UnsupportedLanguageConstruct";
}

// A RuntimeError's message names the CUDA failure.
RuntimeErrorKind runtime_kind_of_message(const std::string& message, RuntimeErrorKind otherwise) {
  const std::string m = ascii_lower(message);
  if (m.find("illegal memory access") != std::string::npos) return RuntimeErrorKind::illegal_memory_access;
  if (m.find("misaligned address") != std::string::npos) return RuntimeErrorKind::misaligned_address;
  if (m.find("out of memory") != std::string::npos) return RuntimeErrorKind::out_of_memory;
  if (m.find("invalid configuration argument") != std::string::npos ||
      m.find("too many resources requested for launch") != std::string::npos ||
      m.find("out of resource") != std::string::npos)
    return RuntimeErrorKind::invalid_launch;
  if (m.find("cuda error") != std::string::npos || m.find("device-side assert") != std::string::npos ||
      m.find("cuda driver error") != std::string::npos)
    return RuntimeErrorKind::cuda_error;
  return otherwise;
}

// A CompilationError's message: "at L:C:\n<up to 12 lines of the function>\n<caret>\n<cause>".
struct CompilationDetail {
  std::vector<std::string> excerpt;  // the function's lines up to the offending one
  std::string inner_type, inner_message;
};

CompilationDetail parse_compilation_message(const std::string& message) {
  CompilationDetail d;
  auto lines = split_lines(message);
  std::size_t caret = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string t = trim(lines[i]);
    if (!t.empty() && t.find_first_not_of('^') == std::string::npos && i > 0) {
      caret = i;
      break;
    }
  }
  static const std::regex kAt(R"(^at \d+:\d+:\s*$)");
  std::size_t first = (!lines.empty() && std::regex_match(lines[0], kAt)) ? 1 : 0;
  if (caret < lines.size())
    d.excerpt.assign(lines.begin() + static_cast<std::ptrdiff_t>(first),
                     lines.begin() + static_cast<std::ptrdiff_t>(caret));
  std::string rest;
  for (std::size_t i = (caret < lines.size() ? caret + 1 : first); i < lines.size(); ++i)
    if (!trim(lines[i]).empty()) rest += (rest.empty() ? "" : "\n") + lines[i];
  static const std::regex kRepr(R"re(^([A-Za-z_][A-Za-z0-9_.]*)\((['"])([\s\S]*)\2\)$)re");
  std::smatch m;
  if (std::regex_match(rest, m, kRepr)) {
    d.inner_type = short_name(m[1].str());
    d.inner_message = m[3].str();
  } else {
    d.inner_message = rest;
  }
  return d;
}

// 1-based line of the excerpt's last line in `source`, matching the excerpt as a contiguous
// block (Triton dedents a nested function's source, so lines are compared without indent).
int locate_excerpt(const std::vector<std::string>& excerpt, std::string_view source) {
  if (excerpt.empty() || source.empty()) return 0;
  const auto src = split_lines(source);
  if (src.size() < excerpt.size()) return 0;
  for (std::size_t s = 0; s + excerpt.size() <= src.size(); ++s) {
    bool ok = true;
    for (std::size_t k = 0; k < excerpt.size() && ok; ++k) ok = trim(src[s + k]) == trim(excerpt[k]);
    if (ok) return static_cast<int>(s + excerpt.size());
  }
  return 0;
}

std::string source_line_at(std::string_view source, int line) {
  if (line <= 0 || source.empty()) return "";
  auto lines = split_lines(source);
  return line <= static_cast<int>(lines.size()) ? trim(lines[static_cast<std::size_t>(line - 1)]) : "";
}

}  // namespace

PythonErrorVerdict classify_python_error(std::string_view type_in, std::string_view message_in,
                                         std::string_view traceback, std::string_view source,
                                         std::string_view source_name) {
  PythonErrorVerdict v;
  const std::string message(message_in);
  v.type = short_name(type_in);
  std::optional<PythonException> parsed;
  if (!traceback.empty()) parsed = parse_traceback(traceback);

  // The line: the last frame in the candidate's file.
  if (parsed && !source_name.empty()) {
    for (auto it = parsed->frames.rbegin(); it != parsed->frames.rend(); ++it)
      if (base_name(it->file) == source_name) {
        v.line = it->line;
        v.source_line = source.empty() ? it->source_line : source_line_at(source, it->line);
        if (v.source_line.empty()) v.source_line = it->source_line;
        break;
      }
  }

  if (is_compilation_error(v.type)) {
    CompilationDetail d = parse_compilation_message(message);
    v.outcome = Outcome::compile_error;
    v.inner_type = !d.inner_type.empty() ? d.inner_type : (parsed ? short_name(parsed->cause_type) : "");
    auto inner = v.inner_type.empty() ? std::nullopt : mapping_of(v.inner_type);
    if (inner && inner->compile)
      v.compile_kind = *inner->compile;
    else if (ascii_lower(d.inner_message).find("type") != std::string::npos)
      v.compile_kind = CompileErrorKind::type_mismatch;  // "must be of type tl.constexpr", "block type"
    else
      v.compile_kind = CompileErrorKind::other;
    v.group = inner && inner->group != PythonErrorGroup::other ? inner->group : PythonErrorGroup::run_logic;
    if (!d.excerpt.empty()) {
      v.source_line = trim(d.excerpt.back());
      if (int l = locate_excerpt(d.excerpt, source))
        v.line = l;
      else
        v.line = 0;  // the frame line is the launch site, not the kernel line
    }
    v.headline =
        v.type + ": " + (v.inner_type.empty() ? "" : v.inner_type + ": ") + first_line(d.inner_message);
    return v;
  }

  v.headline = v.type + (message.empty() ? "" : ": " + first_line(message));
  if (auto m = mapping_of(v.type)) {
    v.outcome = m->outcome;
    v.group = m->group;
    v.compile_kind = m->compile;
    v.runtime_kind = m->runtime;
    if (m->outcome == Outcome::output_mismatch) v.mismatch_kind = MismatchKind::values;
    if (v.runtime_kind && (v.type == "RuntimeError" || v.type == "AcceleratorError"))
      v.runtime_kind = runtime_kind_of_message(message, *v.runtime_kind);
  } else {
    v.outcome = Outcome::runtime_error;
    v.runtime_kind = runtime_kind_of_message(message, RuntimeErrorKind::python_exception);
    v.group = PythonErrorGroup::other;
  }
  return v;
}

std::optional<PythonErrorVerdict> classify_traceback(std::string_view traceback, std::string_view source,
                                                     std::string_view source_name) {
  auto e = parse_traceback(traceback);
  if (!e) return std::nullopt;
  return classify_python_error(e->type, e->message, traceback, source, source_name);
}

std::optional<FailureExplanation> explain_python_failure(const FailureFacts& f) {
  if (f.at_build) {  // the scan's parse failed: TritonBench's Syntax group, the scan's message
    if (f.outcome != Outcome::compile_error) return std::nullopt;
    return FailureExplanation{f.outcome, std::string(f.sub_kind), "Syntax", std::string(f.message)};
  }
  if (f.outcome != Outcome::runtime_error || (f.sub_kind != "python_exception" && f.sub_kind != "load"))
    return std::nullopt;
  const std::string_view name = f.source_name.empty() ? std::string_view("kernel.py") : f.source_name;
  auto v = classify_traceback(f.message, f.source, name);
  if (!v) return std::nullopt;
  // The headline, the candidate's line, then the end of the traceback.
  std::string msg = v->headline;
  if (v->line > 0)
    msg += "\n" + std::string(name) + ":" + std::to_string(v->line) + ": " + v->source_line;
  else if (!v->source_line.empty())
    msg += "\nin the kernel: " + v->source_line;
  return FailureExplanation{v->outcome, v->sub_kind(), std::string(to_string(v->group)),
                            msg + "\n\n" + truncate_middle(f.message, 3000)};
}

}  // namespace kforge::backends
