// kforge/common/json_text.hpp — JSON text that never fails on untrusted strings.
//
// nlohmann::json::dump throws type_error.316 on a string that is not UTF-8; a kernel file, an
// LLM reply, compiler output or a host's stderr can hold any bytes. dump_json first makes every
// string of the value (object keys included) JSON-safe by the rule of utf8.hpp (each invalid
// byte written as `\xNN`), then dumps. Use it for every JSON write that can carry such text.
// Free, pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kforge {

/// j with every string (values and keys, at any depth) passed through json_safe (utf8.hpp).
nlohmann::json json_safe_value(const nlohmann::json& j);

/// json_safe_value(j).dump(indent): never throws on string contents. indent < 0: one line.
std::string dump_json(const nlohmann::json& j, int indent = -1);

}  // namespace kforge
