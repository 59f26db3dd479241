// kforge/common/beneath.hpp — file writes and removals that cannot leave a directory.
//
// Every writer that makes paths under an output directory from names it did not choose (task
// ids, samples: a run's attempts/, import-kernelbench's --out, a library export) goes through
// these (issue 38 §2.1). `rel` is relative to `root`; its components are checked like a task
// id's (common/task_id.hpp: no "", ".", "..", no absolute path, only [A-Za-z0-9._-]), and each
// is opened relative to the one before with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS), or, where the kernel has no openat2 (ENOSYS), openat(O_NOFOLLOW): a
// symbolic link planted anywhere below `root` is refused, never followed. `root` itself is
// opened as given (the caller chose it, symbolic links included).
//
// Errors: a bad `rel` throws std::invalid_argument; a symbolic link or non-directory on the way,
// or any file-system failure, throws std::runtime_error naming root and rel. Thread-safe (no
// shared state; temporary names carry the process id and a counter).
#pragma once

#include <filesystem>
#include <string_view>

namespace kforge {

/// Creates root/rel and its missing parents below root (root must exist).
void create_directories_beneath(const std::filesystem::path& root, const std::filesystem::path& rel);

/// Writes root/rel atomically (a temporary file in the same folder, then renameat), creating
/// the missing folders below root. An existing symbolic link at root/rel is replaced by the
/// file, never written through.
void write_file_beneath(const std::filesystem::path& root, const std::filesystem::path& rel,
                        std::string_view data);

/// Removes the file root/rel (a symbolic link there is removed itself, its target untouched).
/// Returns false when root/rel, or a folder on the way, does not exist.
bool remove_file_beneath(const std::filesystem::path& root, const std::filesystem::path& rel);

}  // namespace kforge
