// kforge/runs/attempt_table.hpp — a run's attempts as one flat table (issue 40 §4): the columns of
// `kforge export RUN --format csv|parquet` and of the Python `kforge.load_run` (docs/tables.md).
//
// One row per attempt, in attempts.jsonl's order; the columns are fixed (attempt_columns(), the
// same for every run: a column nothing measured is all null), named with their units (`_ms`,
// `_gbps`, `_tflops`, `_usd`). A value not measured (a speedup of a failure, a phase that did not
// run, an error figure with no trial) is null, never 0. Pure functions of the records;
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kforge/runs/attempt.hpp"

namespace kforge {

/// A column's type: text, a 64-bit integer, a float64 or a boolean (each nullable).
enum class ColumnType { text, integer, real, boolean };

struct TableColumn {
  std::string name;  ///< stable: a rename is a schema change (docs/tables.md)
  ColumnType type;
  std::string doc;  ///< one line, units included
};

/// Every column, in table order.
const std::vector<TableColumn>& attempt_columns();

/// One cell: std::nullopt = null (not measured), else the value as text (reals with 17
/// significant digits, "nan"/"inf"/"-inf" for non-finite ones, booleans "true"/"false").
using Cell = std::optional<std::string>;

/// A record's row, one cell per attempt_columns() entry.
std::vector<Cell> attempt_row(const AttemptRecord& r);

/// The table as CSV (RFC 4180: a header row, fields with a comma, quote, CR or LF quoted with
/// doubled quotes; null as an empty field, the empty string as "").
std::string attempts_csv(const std::vector<AttemptRecord>& records);

}  // namespace kforge
