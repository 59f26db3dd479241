// kforge/common/utf8.hpp — byte strings made safe for JSON and cut without splitting a character.
//
// Untrusted text (a kernel file, an LLM reply, compiler output, a host's stderr tail) can hold
// any bytes; JSON strings must be UTF-8. The rule used everywhere kforge writes such text into
// JSON: every well-formed UTF-8 sequence (RFC 3629: shortest form, no surrogates, at most
// U+10FFFF) is kept as is; every byte that does not start one is written as the four ASCII
// characters `\xNN` (NN: the byte in uppercase hex), so the original byte stays readable in the
// record. A literal backslash is kept as is (the escape is for people reading the record, not
// a reversible encoding). Cutting to a byte budget (utf8_prefix, truncate_middle) never ends or
// starts inside a multi-byte sequence.
//
// Free, pure functions; thread-safe. dump_json (json_text.hpp) applies json_safe to every string
// of a JSON value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kforge {

/// Length in bytes (1..4) of the well-formed UTF-8 sequence starting at s[i], or 0 when s[i]
/// does not start one (a stray continuation byte, an overlong form, a surrogate, a value above
/// U+10FFFF, or a sequence cut short by the end of s). Precondition: i < s.size().
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

/// Offset of the first byte that does not start a well-formed sequence; npos when s is valid.
std::size_t first_invalid_utf8(std::string_view s);

inline bool is_valid_utf8(std::string_view s) {
  return first_invalid_utf8(s) == std::string_view::npos;
}

/// s with each byte that does not start a well-formed sequence written as `\xNN` (above).
/// Valid input is returned unchanged.
std::string json_safe(std::string_view s);

/// The longest prefix of s of at most max_bytes bytes that does not end inside a well-formed
/// multi-byte sequence (an invalid byte counts as one character).
std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes);

/// The longest suffix of s of at most max_bytes bytes that does not start inside a well-formed
/// multi-byte sequence.
std::string_view utf8_suffix(std::string_view s, std::size_t max_bytes);

}  // namespace kforge
