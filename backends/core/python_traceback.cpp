#include "kforge/backends/python_traceback.hpp"

#include <regex>

#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace {

const char* const kTracebackHeader = "Traceback (most recent call last):";

bool is_chain_line(const std::string& l) {
  return starts_with(l, "The above exception was the direct cause of the following exception:") ||
         starts_with(l, "During handling of the above exception, another exception occurred:");
}

// `Type: message` or a bare `Type` at column 0.
bool exception_line(const std::string& l, std::string& type, std::string& message) {
  static const std::regex kExc(R"(^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:: ?(.*))?$)");
  std::smatch m;
  if (!std::regex_match(l, m, kExc)) return false;
  type = m[1].str();
  message = m[2].str();
  return true;
}

bool looks_like_exception_type(const std::string& t) {
  static const std::regex kName(
      R"((?:^|\.)[A-Za-z_]*(?:Error|Exception|Exit|Interrupt|Failure|Construct|OutOfResources)$)");
  return std::regex_search(t, kName);
}

// One traceback block: frames, then the exception line and its continuation lines.
struct Block {
  std::vector<TracebackFrame> frames;
  std::string type, message;
  bool has_exception = false;
};

Block parse_block(const std::vector<std::string>& lines, std::size_t from, std::size_t to) {
  static const std::regex kFrame(R"re(^\s+File "([^"]*)", line (\d+)(?:, in (.*))?\s*$)re");
  Block b;
  std::size_t i = from;
  for (; i < to; ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (std::regex_match(l, m, kFrame)) {
      b.frames.push_back({m[1].str(), std::stoi(m[2].str()), m[3].str(), ""});
      continue;
    }
    if (!l.empty() && (l[0] == ' ' || l[0] == '\t')) {
      // The echoed source line (the first indented line after a frame), carets, or notes.
      std::string t = trim(l);
      bool caret = !t.empty() && t.find_first_not_of("^~ ") == std::string::npos;
      if (!b.frames.empty() && b.frames.back().source_line.empty() && !caret &&
          !starts_with(t, "[Previous line"))
        b.frames.back().source_line = t;
      continue;
    }
    if (l.empty()) continue;
    break;
  }
  if (i < to && exception_line(lines[i], b.type, b.message)) {
    b.has_exception = true;
    for (std::size_t j = i + 1; j < to; ++j) b.message += "\n" + lines[j];
    while (!b.message.empty() && (b.message.back() == '\n' || b.message.back() == ' ')) b.message.pop_back();
  }
  return b;
}

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::optional<PythonException> parse_traceback(std::string_view text) {
  const auto lines = split_lines(text);
  std::vector<std::size_t> headers;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (rstrip(lines[i]) == kTracebackHeader) headers.push_back(i);
  PythonException e;
  if (headers.empty()) {
    // No traceback: the last `SomeError: message` line at column 0.
    for (std::size_t i = lines.size(); i-- > 0;) {
      std::string type, message;
      if (exception_line(rstrip(lines[i]), type, message) && looks_like_exception_type(type)) {
        e.type = type;
        e.message = message;
        for (std::size_t j = i + 1; j < lines.size(); ++j) e.message += "\n" + lines[j];
        e.message = rstrip(e.message);
        return e;
      }
    }
    return std::nullopt;
  }
  // The block of the last header runs to the end; the block before it to the chain line.
  const std::size_t last = headers.back();
  Block b = parse_block(lines, last + 1, lines.size());
  if (!b.has_exception) return std::nullopt;
  e.type = b.type;
  e.message = b.message;
  e.frames = std::move(b.frames);
  if (headers.size() >= 2) {
    std::size_t end = last;
    while (end > headers[headers.size() - 2] + 1 && !is_chain_line(lines[end - 1])) --end;
    if (end > headers[headers.size() - 2] + 1) {
      Block prev = parse_block(lines, headers[headers.size() - 2] + 1, end - 1);
      if (prev.has_exception) e.cause_type = prev.type;
    }
  }
  return e;
}

std::string failure_headline(std::string_view text) {
  constexpr std::string_view kMarker = "Traceback (most recent call last):";
  std::string first;
  for (const auto& l : split_lines(text))
    if (!(first = trim(l)).empty()) break;
  const auto at = first.find(kMarker);
  if (at == std::string::npos) return first;
  // The text opens with a traceback (after a prefix on its line, such as the runner's
  // "python_exception: "): its last line names the exception.
  std::string prefix = trim(first.substr(0, at));
  auto e = parse_traceback(text);
  if (!e) {  // cut short: its last line, whatever it is
    std::string last;
    for (const auto& l : split_lines(text))
      if (!trim(l).empty() && trim(l).find(kMarker) == std::string::npos) last = trim(l);
    last = last.empty() ? "a Python traceback without its exception line" : last;
    return prefix.empty() ? last : prefix + " " + last;
  }
  std::string line = e->type + (e->message.empty() ? "" : ": " + first_line(e->message));
  return prefix.empty() ? line : prefix + " " + line;
}

}  // namespace kforge::backends
