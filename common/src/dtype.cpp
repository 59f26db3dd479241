#include "kforge/common/dtype.hpp"

#include <array>
#include <utility>

namespace kforge {

std::int64_t dtype_bytes(std::string_view dtype) {
  // clang-format off
  static constexpr std::array<std::pair<std::string_view, std::int64_t>, 25> kBytes{{
      {"bool", 1}, {"int8", 1}, {"uint8", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
      {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
      {"float16", 2}, {"half", 2}, {"bfloat16", 2}, {"int16", 2}, {"short", 2}, {"uint16", 2},
      {"float32", 4}, {"float", 4}, {"int32", 4}, {"int", 4}, {"uint32", 4},
      {"float64", 8}, {"double", 8}, {"int64", 8}, {"long", 8}, {"uint64", 8}, {"complex64", 8},
      {"complex128", 16}}};
  // clang-format on
  for (const auto& [name, bytes] : kBytes)
    if (name == dtype) return bytes;
  return 4;
}

}  // namespace kforge
