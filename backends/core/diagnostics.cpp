#include "kforge/backends/diagnostics.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <tuple>

#include "kforge/common/ascii.hpp"
#include "kforge/common/utf8.hpp"
#include "kforge/common/util.hpp"

namespace kforge::backends {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::note:
      return "note";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "error";
}

Severity severity_of(std::string_view word) {
  if (word == "warning") return Severity::warning;
  if (word == "note" || word == "remark" || word == "info") return Severity::note;
  return Severity::error;  // error, fatal error, fatal, catastrophic error
}

namespace {

/// Lines longer than this are cut before matching (std::regex recursion on huge lines).
constexpr std::size_t kMaxLine = 4096;

/// gcc quotes with U+2018/U+2019 (and nvcc sometimes with U+201C/U+201D) outside the C locale.
std::string ascii_quotes(std::string s) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"\xE2\x80\x98", "'"}, {"\xE2\x80\x99", "'"}, {"\xE2\x80\x9C", "\""}, {"\xE2\x80\x9D", "\""}};
  for (const auto& [from, to] : kMap) {
    std::size_t pos = 0;
    while ((pos = s.find(from, pos)) != std::string::npos) {
      s.replace(pos, from.size(), to);
      pos += to.size();
    }
  }
  return s;
}

std::string base_name(std::string_view p) {
  const auto slash = p.find_last_of('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

int to_int(const std::ssub_match& m) {
  if (!m.matched || m.length() == 0 || m.length() > 9) return 0;
  return std::stoi(m.str());
}

bool contains_any(const std::string& hay, std::initializer_list<std::string_view> needles) {
  for (auto n : needles)
    if (hay.find(n) != std::string::npos) return true;
  return false;
}

}  // namespace

namespace {

/// One line in the core's formats into d: g++/cc1plus/nvcc's host pass, GNU ld, a linker
/// location, a driver's tool-level message. False when it is none of them, or is only a
/// linker's context line ("/tmp/cc.o: in function `kf_forward':").
bool match_core(const std::string& line, Diagnostic& d) {
  // file:line[:col]: severity: message
  static const std::regex kGcc(R"(^(.*?):([0-9]+):(?:([0-9]+):)? (fatal error|error|warning|note): (.*)$)");
  // GNU ld: [path/]ld[.variant]: rest
  static const std::regex kLd(R"(^(?:\S*/)?ld(?:\.[a-z]+)?: (.*)$)");
  // A linker location: file[:line]:(.section+0xoff): message
  static const std::regex kLinkLoc(R"(^(.*?):(?:([0-9]+):)?\((\.[^)]*)\): (.*)$)");
  // A tool-level message of the driver: collect2/g++/cc1plus: severity: message
  static const std::regex kDriver(R"(^([A-Za-z0-9_.+-]+): (fatal error|error|warning|note): (.*)$)");
  std::smatch m;
  if (std::regex_match(line, m, kGcc)) {
    d.file = m[1].str();
    d.line = to_int(m[2]);
    d.column = to_int(m[3]);
    d.severity = severity_of(m[4].str());
    d.message = m[5].str();
    d.tool = "compiler";
  } else if (std::regex_match(line, m, kLd)) {
    const std::string rest = m[1].str();
    std::smatch lm;
    d.tool = "linker";
    if (std::regex_match(rest, lm, kLinkLoc)) {
      d.file = lm[1].str();
      d.line = to_int(lm[2]);
      d.message = lm[4].str();
    } else if (!rest.empty() && rest.back() == ':' && rest.find("in function") != std::string::npos) {
      return false;
    } else if (starts_with(rest, "warning: ")) {
      d.severity = Severity::warning;
      d.message = rest.substr(9);
    } else {
      d.message = rest;
    }
  } else if (std::regex_match(line, m, kLinkLoc) && m[4].str().find("reference") != std::string::npos) {
    d.file = m[1].str();
    d.line = to_int(m[2]);
    d.message = m[4].str();
    d.tool = "linker";
  } else if (std::regex_match(line, m, kDriver)) {
    d.severity = severity_of(m[2].str());
    d.message = m[3].str();
    d.tool = m[1].str() == "collect2" ? "linker" : "driver";
  } else {
    return false;
  }
  return true;
}

/// A note as the error it belongs to shows it: "file:line[:col]: note: message" and its source line.
std::string note_text(const Diagnostic& d) {
  std::string n = d.file.empty() ? d.tool + ": note: " + d.message
                                 : d.file + ":" + std::to_string(d.line) +
                                       (d.column > 0 ? ":" + std::to_string(d.column) : std::string()) +
                                       ": note: " + d.message;
  if (!d.source_line.empty()) n += "\n" + std::to_string(d.line) + " | " + trim(d.source_line);
  return n;
}

/// A dialect's context line of the previous error ("" when none claims it).
std::string dialect_context(const std::vector<DiagnosticDialect>& dialects, const std::string& line) {
  std::string context;
  for (const auto& dialect : dialects)
    if (dialect.context && !(context = dialect.context(line)).empty()) break;
  return context;
}

}  // namespace

std::vector<Diagnostic> parse_diagnostics(std::string_view log, std::string_view source,
                                          std::string_view source_name,
                                          const std::vector<DiagnosticDialect>& dialects) {
  std::vector<Diagnostic> out;
  const auto src_lines = split_lines(source);
  const std::string src_base = base_name(source_name);

  auto fill_source = [&](Diagnostic& d) {
    if (src_base.empty() || d.line <= 0 || base_name(d.file) != src_base) return;
    if (static_cast<std::size_t>(d.line) > src_lines.size()) return;
    std::string l = src_lines[static_cast<std::size_t>(d.line) - 1];
    while (!l.empty() && std::isspace(static_cast<unsigned char>(l.back()))) l.pop_back();
    d.source_line = std::move(l);
  };

  // The error or warning that notes attach to (index into out; npos: none yet).
  std::size_t owner = std::string::npos;
  for (auto raw : split_lines(log)) {
    if (raw.size() > kMaxLine) raw = std::string(utf8_prefix(raw, kMaxLine));  // whole characters
    const std::string line = ascii_quotes(raw);
    if (owner != std::string::npos) {  // a dialect's context of the previous error
      if (std::string context = dialect_context(dialects, line); !context.empty()) {
        out[owner].notes.push_back(std::move(context));
        continue;
      }
    }
    Diagnostic d;
    const bool dialect_line = std::any_of(
        dialects.begin(), dialects.end(),
        [&](const DiagnosticDialect& dialect) { return dialect.match && dialect.match(line, d); });
    if (!dialect_line && !match_core(line, d)) continue;
    fill_source(d);
    if (d.severity != Severity::note)
      owner = out.size();
    else if (owner != std::string::npos)
      out[owner].notes.push_back(note_text(d));
    out.push_back(std::move(d));
  }
  return out;
}

const Diagnostic* first_error(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags)
    if (d.severity == Severity::error) return &d;
  return nullptr;
}

CompileErrorKind classify(const Diagnostic& d) {
  const std::string m = ascii_lower(d.message);
  if (contains_any(m, {"no such file or directory", "cannot open source file", "cannot open include file"}))
    return CompileErrorKind::missing_include;
  if (d.tool == "linker" || d.tool == "nvlink" ||
      contains_any(m, {"undefined reference", "ld returned", "unresolved extern", "undefined symbol",
                       "multiple definition", "cannot find -l"}))
    return CompileErrorKind::link;
  if (contains_any(m, {"has no member", "is not a member of", "no member named"}))
    return CompileErrorKind::no_member;
  if (contains_any(m, {"was not declared", "is undefined", "undeclared", "does not name a type",
                       "has not been declared", "is not declared", "not declared in this scope",
                       "does not name a template", "is not a template", "unknown type name"}))
    return CompileErrorKind::undeclared;
  if (contains_any(m, {"cannot convert",
                       "invalid conversion",
                       "no matching function",
                       "is incompatible",
                       "cannot be used to initialize",
                       "no instance of",
                       "no suitable conversion",
                       "invalid operands",
                       "no match for",
                       "incompatible type",
                       "cannot bind",
                       "cannot be assigned",
                       "a value of type",
                       "conversion from",
                       "invalid cast",
                       "no operator",
                       "too many arguments",
                       "too few arguments",
                       "cannot initialize",
                       "invalid type argument",
                       "is not a pointer",
                       "expression must have",
                       "ambiguous"}))
    return CompileErrorKind::type_mismatch;
  if (starts_with(m, "expected") ||
      contains_any(m, {"stray '", "missing terminating", "unterminated", "extra tokens", "unexpected",
                       "expected an expression", "expected a", "parse error", "syntax error",
                       "invalid preprocessing directive", "expected declaration",
                       "declaration has no storage class", "expected primary-expression",
                       "expected unqualified-id", "before numeric constant", "at end of input"}))
    return CompileErrorKind::syntax;
  return CompileErrorKind::other;
}

std::optional<CompileErrorKind> classify_first_error(const std::vector<Diagnostic>& diags) {
  if (const auto* e = first_error(diags)) return classify(*e);
  return std::nullopt;
}

std::string summarise(const std::vector<Diagnostic>& diags, std::size_t max_errors, std::size_t max_bytes,
                      std::size_t max_notes) {
  std::set<std::tuple<std::string, int, std::string>> seen;
  std::vector<std::string> entries;
  std::size_t distinct = 0;
  for (const auto& d : diags) {
    if (d.severity != Severity::error) continue;
    if (!seen.emplace(d.file, d.line, d.message).second) continue;
    ++distinct;
    if (entries.size() >= max_errors) continue;
    std::string e;
    if (!d.file.empty()) {
      e += d.file;
      if (d.line > 0) e += ":" + std::to_string(d.line);
      if (d.column > 0) e += ":" + std::to_string(d.column);
      e += ": ";
    } else if (!d.tool.empty() && d.tool != "compiler") {
      e += d.tool + ": ";
    }
    e += "error: " + d.message + "\n";
    if (!d.source_line.empty()) e += "  " + std::to_string(d.line) + " | " + trim(d.source_line) + "\n";
    std::size_t shown_notes = 0;
    for (const auto& n : d.notes) {
      if (shown_notes == max_notes) {
        e += "    (" + std::to_string(d.notes.size() - shown_notes) + " more note(s))\n";
        break;
      }
      for (const auto& nl : split_lines(truncate_middle(n, 600))) e += "    " + nl + "\n";
      ++shown_notes;
    }
    entries.push_back(std::move(e));
  }
  if (entries.empty()) return {};
  std::string out;
  std::size_t shown = 0;
  for (const auto& e : entries) {
    if (out.size() + e.size() > max_bytes) {
      if (shown == 0) {
        out = truncate_middle(e, max_bytes);
        shown = 1;
      }
      break;
    }
    out += e;
    ++shown;
  }
  if (distinct > shown) {
    const std::string more = "(" + std::to_string(distinct - shown) + " more error" +
                             (distinct - shown == 1 ? "" : "s") + " not shown)\n";
    if (out.size() + more.size() <= max_bytes) out += more;
  }
  return out;
}

}  // namespace kforge::backends
