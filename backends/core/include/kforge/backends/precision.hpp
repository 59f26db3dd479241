// kforge/backends/precision.hpp — the precision contract's detection part (docs/judge.md).
//
// A candidate's math may be no less precise than the reference's: the task's dtype (TF32 only
// where PyTorch itself uses it for the reference). The artifact's backend reports the
// lower-precision math it can find (Backend::inspect_precision, a PrecisionReport): the cuda
// backend disassembles the embedded cubins and reads the tensor-core instructions' operand
// types (backends/cuda, cuda_precision.hpp); a backend that inspects nothing gives an empty
// report. disallowed_precision() decides which of the kinds found fall below the task's
// dtypes. Values and pure functions; thread-safe.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::backends {

struct PrecisionReport {
  bool inspected = false;            ///< the artifact was disassembled (false: no tool, not cuda, error)
  std::set<std::string> kinds;       ///< "tf32", "fp16", "bf16", "int8", "fp8", "fp4", "b1"
  std::vector<std::string> samples;  ///< up to 8 distinct instructions found (opcode with modifiers)
  std::string error;                 ///< why not inspected ("" when inspected or not applicable)
  std::string joined() const;        ///< kinds comma-separated and sorted, "" when none
};

/// The precision kinds of `found` that fall below `dtypes` (the task's floating dtypes, e.g.
/// {"float32"}) and are not in `allowed`. A float32 task: tf32, fp16, bf16, fp8, fp4, int8, b1
/// are below; a float16 task: fp8, fp4, int8, b1 (bf16 too: fewer mantissa bits); a bfloat16
/// task: fp8, fp4, int8, b1 (fp16 has more mantissa bits but less range: below as well);
/// float64: everything. No floating dtype: nothing is below.
std::set<std::string> disallowed_precision(const std::set<std::string>& found,
                                           const std::set<std::string>& dtypes,
                                           const std::set<std::string>& allowed);

}  // namespace kforge::backends
