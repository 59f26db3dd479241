// kforge/agent/table_export.hpp — `kforge export RUN --format csv|parquet [--out FILE]` (issue 40 §4):
// a run's attempts as one flat table, one row per attempt, the columns of runs/attempt_table.hpp
// (docs/tables.md). CSV is written here; Parquet by the Python package python/kforge
// (`python -m kforge parquet`, pandas and pyarrow: kforge writes no Parquet of its own), run with
// $KFORGE_PYTHON, else the triton backend's interpreter. Not thread-safe (writes one file).
#pragma once

#include <filesystem>
#include <string>

namespace kforge::agent {

struct ExportCommand {
  std::filesystem::path run;   ///< the run directory (holding attempts.jsonl)
  std::string format = "csv";  ///< csv or parquet
  std::filesystem::path out;   ///< "" = RUN/attempts.<format>; "-" = stdout (csv only)
};

/// 0 when written; 2 for a run without attempts.jsonl, a record that cannot be read, `--out -`
/// with parquet, or parquet without pandas/pyarrow (the message says how to install them); 76
/// when the Python side fails otherwise (kforge's own failure).
int run_export(const ExportCommand& cmd);

}  // namespace kforge::agent
