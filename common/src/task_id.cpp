#include "kforge/common/task_id.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace kforge {

namespace {
bool allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}
}  // namespace

std::optional<std::string> task_id_problem(std::string_view id) {
  if (id.empty()) return "is empty";
  if (id.size() > 1024) return "is longer than 1024 bytes";
  if (id.front() == '/') return "is an absolute path";
  for (char c : id) {
    if (c == '/' || allowed(c)) continue;
    char shown[32];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      std::snprintf(shown, sizeof shown, "'%c'", c);
    else
      std::snprintf(shown, sizeof shown, "byte 0x%02x", u);
    return std::string("contains the character ") + shown +
           " (a task id is components of A-Z a-z 0-9 . _ - joined by '/')";
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = id.find('/', start);
    const std::string_view part = id.substr(start, slash == std::string_view::npos ? id.npos : slash - start);
    if (part.empty()) return "has an empty component";
    if (part == "." || part == "..") return "has a '" + std::string(part) + "' component";
    if (part.size() > 255) return "has a component longer than 255 bytes";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::nullopt;
}

void require_valid_task_id(std::string_view id) {
  if (auto p = task_id_problem(id))
    throw std::invalid_argument("task id '" + std::string(id.substr(0, 200)) + "' " + *p);
}

std::string closest_name(std::string_view name, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = static_cast<std::size_t>(-1);
  std::vector<std::size_t> row(name.size() + 1);
  for (const auto& k : known) {
    for (std::size_t i = 0; i <= name.size(); ++i) row[i] = i;
    for (std::size_t j = 1; j <= k.size(); ++j) {
      std::size_t diag = row[0];
      row[0] = j;
      for (std::size_t i = 1; i <= name.size(); ++i) {
        const std::size_t up = row[i];
        row[i] = std::min({row[i] + 1, row[i - 1] + 1, diag + (name[i - 1] == k[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[name.size()] < best_d) {
      best_d = row[name.size()];
      best = k;
    }
  }
  return best;
}

}  // namespace kforge
