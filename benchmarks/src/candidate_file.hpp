// Internal to kforge_benchmarks: which file of an attempt directory is the candidate's source,
// for the reports (report.cpp library_kernels, report_html.cpp). Pure; thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace kforge {

/// The candidate's source in `dir`: the first of kernel.cu, kernel.cpp and kernel.py that is a
/// regular file, the one named after the record's `backend` (the built-in backends' file names)
/// tried first, since a directory may hold kforge's build of another next to it; "" when none.
std::filesystem::path candidate_file(const std::filesystem::path& dir, const std::string& backend);

}  // namespace kforge
