// kforge/benchmarks/operators.hpp — ATen-operator tasks as BackendBench defines them (issue 24).
//
// An operator task is one ATen overload (`aten.add.Tensor`) with a list of input cases; it is
// correct only if every case passes (BackendBench's rule). Cases are read from BackendBench's
// trace format, unchanged:
//
//   Operator: aten.add.Tensor
//   cnt: 12, ((T([1, 512, 768], f16), T([1, 512, 768], f16)), {})
//   cnt: 1, ((T([64, 3, 7, 7], f16, [147, 1, 21, 3]), 2), {'alpha': 2})
//
// `T(size, dtype[, stride])` is a tensor made by BackendBench's rule (torch.testing.make_tensor,
// floating values in [0, 1); with a stride, a strided view of a buffer of the stride's extent);
// everything else is a Python literal (numbers, True/False/None, strings, lists, tuples,
// `torch.*` names, BackendBench's dtype abbreviations such as `f16`). `cnt: 0` marks a synthetic
// case (BackendBench's `is_synthetic`). BackendBench renames `aten.sum.SymInt` to
// `aten.sum.dim_IntList` (its data_loaders.py); so does this parser.
//
// An operator task reaches the judge as a generated KernelBench-format module (Task::source): a
// Model whose forward calls the operator on every case and returns all their outputs, and a
// get_inputs() drawing every case's tensors. The candidate defines `<op>_kernel_impl(*args,
// **kwargs)` with the operator's signature (BackendBench's DirectoryBackend name); kforge
// appends an adapter to the candidate's module (`operator_adapter`) whose kf_forward calls it on
// every case with the case's non-tensor arguments, so one check covers every case, under the
// judge's usual trials. Plain data and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/benchmarks/task.hpp"

namespace kforge {

/// One operator and its cases, as a trace file lists them.
struct TraceOperator {
  std::string op;  ///< "aten.add.Tensor"
  int line = 0;    ///< the `Operator:` line
  std::vector<OperatorCase> cases;
};

/// A parsed trace: the operators in file order (an operator listed twice has its cases merged)
/// and the lines that could not be read (file, "line N", why).
struct TraceFile {
  std::vector<TraceOperator> ops;
  std::vector<LoadError> errors;
  std::size_t cases() const;
};

/// Parses one case's argument text `((args...), {kwargs})`. Returns the reason when it is not one.
std::optional<std::string> parse_case_args(const std::string& text, OperatorCase& out);

/// Parses BackendBench's trace format. Blank lines are skipped; a `cnt:` line before any
/// `Operator:` line, a `cnt:` line whose arguments do not parse, and any other line are reported
/// in errors with `file` and the line number; the rest loads.
TraceFile parse_trace(const std::string& text, const std::filesystem::path& file);

/// The name the candidate defines: "<packet>_kernel_impl" ("aten.relu.default" ->
/// "relu_kernel_impl"); leading and trailing underscores of dunder packets are dropped
/// ("aten.__and__.Tensor" -> "and_kernel_impl").
std::string operator_entry(const std::string& op);

/// True for overloads BackendBench's op map serves from the functional one rather than as tasks
/// of their own: in-place (`add_.Tensor`) and `out=` (`add.out`) variants.
bool is_variant_overload(const std::string& op);

/// The KernelBench-format module judging `op` on `cases` (every case in one call; outputs in
/// case order, each case's result flattened).
std::string operator_module_source(const std::string& op, const std::vector<OperatorCase>& cases,
                                   const std::string& origin);

/// The cases as a Markdown table for the prompt: one row per case (its trace line and count, every
/// positional and keyword argument: tensors as `f32[64, 32]` with `stride [1, 16]` when strided,
/// other values as written). At most `max_rows` rows, then a row saying how many were left out.
std::string operator_cases_table(const std::vector<OperatorCase>& cases, std::size_t max_rows = 64);

/// The text kforge appends to a candidate's module for an operator task: a kf_forward taking the
/// cases' tensors (in get_inputs() order) and calling operator_entry(op) on each case.
std::string operator_adapter(const std::string& op, const std::vector<OperatorCase>& cases);

/// The first line of operator_adapter's text: what `kforge library export` cuts at to keep the
/// candidate's own code.
const std::string& operator_adapter_marker();

/// One case's arguments in BackendBench's trace syntax, `((T([8, 40], f32), 0.5), {})`, from
/// its parse (what parse_case_args reads back).
std::string case_args_text(const OperatorCase& c);

/// Cases of `op` in BackendBench's trace format (`Operator:` line, one `cnt:` line per case).
std::string trace_text(const std::string& op, const std::vector<OperatorCase>& cases);

/// Dense strides for `shape` laid out in the order `stride` implies (smallest stride innermost;
/// a zero stride, a broadcast dimension, stays zero): a strided case's layout at new sizes.
std::vector<std::int64_t> dense_strides_like(const std::vector<std::int64_t>& shape,
                                             const std::vector<std::int64_t>& stride);

/// The unseen cases of an operator (issue 24 §3): each case with shapes.hpp's unseen-shape rule
/// (unseen_size: every tensor dimension and integer literal in [16, 2^31) grows by 7, one mapping
/// for the whole case, so matching sizes, broadcasts and size arguments such as a layer norm's
/// normalized_shape still agree); strided tensors keep their layout (dense_strides_like).
/// Counts and lines stay. `changed` (optional) receives how many cases differ from the shown ones.
std::vector<OperatorCase> unseen_cases(const std::vector<OperatorCase>& cases,
                                       std::size_t* changed = nullptr);

/// The C++ text kforge appends to a cpu or cuda candidate for an operator task: a kf_forward
/// calling the candidate's `extern "C" int <op>_kernel_impl(inputs, n_inputs, outputs, n_outputs,
/// args, n_args, stream)` (kernel_abi.h) once per case, with the case's tensors as views of the
/// judge's inputs (strided ones with the case's sizes and strides), its arguments as kf_arg values
/// and its slice of the outputs (n_outputs / cases each).
std::string operator_adapter_native(const std::string& op, const std::vector<OperatorCase>& cases);

/// The first line of operator_adapter_native's text (what the library cuts at).
const std::string& native_adapter_marker();

/// The task of one operator: format aten_operator, id = op, generated source, BackendBench's
/// tolerance (atol = rtol = 1e-2 for floating outputs; integers exact).
Task operator_task(const TraceOperator& op, const std::filesystem::path& file);

/// Loads a trace file (or a directory holding `operators.txt`) as a suite: one task per
/// operator; in-place and out= overloads and operators without cases are noted and skipped.
void load_operator_suite(Suite& s, const std::filesystem::path& trace);

}  // namespace kforge
