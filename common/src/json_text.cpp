#include "kforge/common/json_text.hpp"

#include "kforge/common/utf8.hpp"

namespace kforge {

using nlohmann::json;

namespace {

/// True when some string of j (value or key) is not valid UTF-8: the common case needs no copy.
bool needs_fixing(const json& j) {
  switch (j.type()) {
    case json::value_t::string:
      return !is_valid_utf8(j.get_ref<const std::string&>());
    case json::value_t::array:
      for (const auto& v : j)
        if (needs_fixing(v)) return true;
      return false;
    case json::value_t::object:
      for (const auto& [k, v] : j.items())
        if (!is_valid_utf8(k) || needs_fixing(v)) return true;
      return false;
    default:
      return false;
  }
}

json fixed(const json& j) {
  switch (j.type()) {
    case json::value_t::string:
      return json_safe(j.get_ref<const std::string&>());
    case json::value_t::array: {
      json out = json::array();
      for (const auto& v : j) out.push_back(fixed(v));
      return out;
    }
    case json::value_t::object: {
      json out = json::object();
      for (const auto& [k, v] : j.items()) out[json_safe(k)] = fixed(v);
      return out;
    }
    default:
      return j;
  }
}

}  // namespace

json json_safe_value(const json& j) {
  return needs_fixing(j) ? fixed(j) : j;
}

std::string dump_json(const json& j, int indent) {
  if (!needs_fixing(j)) return j.dump(indent);
  return fixed(j).dump(indent);
}

}  // namespace kforge
