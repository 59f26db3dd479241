#include "kforge/common/util.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "kforge/common/utf8.hpp"

namespace kforge {

std::filesystem::path kforge_home() {
  if (const char* h = std::getenv("KFORGE_HOME"); h && *h) return h;
  return KFORGE_SOURCE_DIR;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, std::string_view data) {
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  auto tmp = p;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot write: " + std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error(tmp.string() + ": write failed");
  }
  std::filesystem::rename(tmp, p);
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string first_line(std::string_view s) {
  return std::string(s.substr(0, s.find('\n')));
}

std::vector<std::string> split_lines(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto nl = s.find('\n', pos);
    if (nl == std::string_view::npos) {
      if (pos < s.size()) out.emplace_back(s.substr(pos));
      break;
    }
    auto line = s.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    pos = nl + 1;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string format_double(const char* printf_format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, printf_format, v);
  return b;
}

std::string truncate_middle(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  // Cut on character boundaries: a multi-byte UTF-8 sequence is kept whole or dropped whole.
  std::string_view head = utf8_prefix(s, max_bytes / 2);
  std::string_view tail = utf8_suffix(s, max_bytes - max_bytes / 2);
  std::string out(head);
  out += "\n... [" + std::to_string(s.size() - head.size() - tail.size()) + " bytes truncated] ...\n";
  out += tail;
  return out;
}

void setup_logging(bool verbose, bool quiet) {
  auto logger = spdlog::stderr_color_mt("kforge");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(verbose ? spdlog::level::debug : (quiet ? spdlog::level::warn : spdlog::level::info));
}

}  // namespace kforge
