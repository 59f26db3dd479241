// kforge/common/util.hpp — small shared helpers: files, paths, strings, logging setup.
//
// Free functions, no shared state except spdlog's global logger (set once at start-up
// by setup_logging, before threads start). File helpers throw std::runtime_error naming
// the path when the file system fails: they are for configuration and records, where a
// failure is a broken invariant, not an attempt's outcome.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

/// Root of kforge's own files (prompts/, backends/abi, benchmarks/suites): $KFORGE_HOME
/// when set, else the source directory baked in at build time.
std::filesystem::path kforge_home();

/// Reads a whole file. Throws std::runtime_error("<path>: <reason>") on failure.
std::string read_file(const std::filesystem::path& p);

/// Writes a whole file atomically (temp file + rename). Throws on failure.
void write_file(const std::filesystem::path& p, std::string_view data);

std::string trim(std::string_view s);
std::vector<std::string> split_lines(std::string_view s);
/// `s` up to its first '\n' (all of it when it has none); a '\r' before the '\n' is kept.
std::string first_line(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);

/// `v` printed through a printf format holding one floating conversion ("%.2f", "%.2fx",
/// "%.3g ms"): the numbers of tables, notes and prompts. At most 63 bytes.
std::string format_double(const char* printf_format, double v);

/// Truncates text to at most max_bytes (plus the marker line), keeping head and tail around a
/// marker line "... [N bytes truncated] ..."; the cuts never split a UTF-8 sequence (utf8.hpp).
std::string truncate_middle(std::string_view s, std::size_t max_bytes);

/// Logging: level "info" by default, "debug" with verbose, "warn" with quiet. Logs go to stderr.
void setup_logging(bool verbose, bool quiet);

}  // namespace kforge
