// Internal to kforge_benchmarks: which file of an attempt directory is the candidate's source,
// for the reports (report.cpp library_kernels, report_html.cpp). Pure but for reading the
// directory; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace kforge {

/// A candidate file of an attempt directory and its bytes.
struct CandidateFile {
  std::filesystem::path path;       ///< empty when the directory holds none
  std::optional<std::string> text;  ///< std::nullopt when the file could not be read
};

/// The candidate's source in `dir`, chosen by what was judged, never by a backend's name: of
/// kernel.cu, kernel.cpp and kernel.py, the regular file whose bytes hash (SHA-256) to the
/// record's `source_sha`, kforge's operator adapter (appended after its marker, operators.hpp)
/// left out, since a directory may hold kforge's build of another file next to it. Without a
/// match (a record with no hash, a file changed since) the first of them that exists; an empty
/// path when none does.
CandidateFile candidate_file(const std::filesystem::path& dir, const std::string& source_sha);

}  // namespace kforge
