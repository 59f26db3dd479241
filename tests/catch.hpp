// tests/catch.hpp — one include for Catch2 2.x (Debian 12) and 3.x (GPU machine).
// Tests use Catch::Contains(str) as a string matcher in both versions, and
// Catch::Matchers::StartsWith / EndsWith (both versions have them there).
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define KF_CATCH3 1
#include <string>
namespace Catch {
inline auto Contains(const std::string& s) {
  return Matchers::ContainsSubstring(s);
}
}  // namespace Catch
using Catch::Approx;  // Catch2 2.x has it at global scope
#else
#include <catch2/catch.hpp>
#endif
