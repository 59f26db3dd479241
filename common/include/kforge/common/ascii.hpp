// kforge/common/ascii.hpp — ASCII case folding, the one `lower()` of kforge: HTTP header names
// and hosts, compiler and Python messages, retrieval tokens, file names, HTML tags.
//
// Pure, header-only, thread-safe. Only 'A'..'Z' change: the result does not depend on the C
// locale, and bytes of UTF-8 sequences pass unchanged.
#pragma once

#include <string>
#include <string_view>

namespace kforge {

/// `s` with 'A'..'Z' turned into 'a'..'z'; every other byte unchanged.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace kforge
