#include "kforge/common/utf8.hpp"

namespace kforge {

namespace {
bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}
}  // namespace

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (RFC 3629, table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (i + n > s.size()) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (!continuation(at(k))) return 0;
  return n;
}

std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string json_safe(std::string_view s) {
  std::size_t bad = first_invalid_utf8(s);
  if (bad == std::string_view::npos) return std::string(s);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out(s.substr(0, bad));
  out.reserve(s.size() + 16);
  for (std::size_t i = bad; i < s.size();) {
    std::size_t n = utf8_sequence_length(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i++]);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xF];
  }
  return out;
}

std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t end = max_bytes;
  // A sequence starting at most 3 bytes before the cut and reaching past it is dropped whole.
  for (std::size_t k = 1; k <= 3 && k <= end; ++k)
    if (utf8_sequence_length(s, end - k) > k) {
      end -= k;
      break;
    }
  return s.substr(0, end);
}

std::string_view utf8_suffix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t start = s.size() - max_bytes;
  // A sequence starting at most 3 bytes before the cut and reaching past it is dropped whole.
  for (std::size_t k = 1; k <= 3 && k <= start; ++k)
    if (std::size_t n = utf8_sequence_length(s, start - k); n > k) {
      start = start - k + n;
      break;
    }
  return s.substr(start);
}

}  // namespace kforge
