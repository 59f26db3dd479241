// kforge/benchmarks/operator_case.hpp — one input case of an ATen-operator task (operators.hpp):
// the parsed arguments of one line of BackendBench's trace format. Its own header so that Task
// (task.hpp) can hold its cases. Plain data; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

/// One argument of a case: a tensor `T(...)`, a Python literal (atom), a list, a tuple or a dict.
struct OpValue {
  enum class Kind { tensor, atom, list, tuple, dict };
  Kind kind = Kind::atom;
  std::string text;                   ///< atom: its Python text, normalized (see render)
  std::vector<std::int64_t> shape;    ///< tensor
  std::vector<std::int64_t> stride;   ///< tensor: empty = contiguous
  std::string dtype;                  ///< tensor: BackendBench's abbreviation ("f16", "i64", "b8")
  std::vector<OpValue> items;         ///< list, tuple, dict values
  std::vector<std::string> keys;      ///< dict keys (strings, unquoted)
};

/// One `cnt:` line: the count, the arguments as written, and their parse.
struct OperatorCase {
  int count = 0;      ///< how often the traced model made this call; 0 = synthetic
  std::string args;   ///< the text after "cnt: N, ", as written
  int line = 0;       ///< 1-based line in its file
  std::vector<OpValue> positional;
  std::vector<std::pair<std::string, OpValue>> keyword;
  /// Bytes of the case's tensors (BackendBench's _args_size: numel * element size, lists
  /// included); the largest cases are its performance cases.
  double input_bytes() const;
};

}  // namespace kforge
