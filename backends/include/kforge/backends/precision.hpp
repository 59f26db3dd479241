// kforge/backends/precision.hpp — the precision contract's detection part (docs/judge.md).
//
// A candidate's math may be no less precise than the reference's: the task's dtype (TF32 only
// where PyTorch itself uses it for the reference). detect_precision() inspects a compiled
// artifact for lower-precision math; for cuda artifacts it disassembles the embedded cubins
// (`cuobjdump -sass`, run in the sandbox) and looks for tensor-core instructions and their
// operand types:
//   HMMA / HGMMA / UTCHMMA     .TF32 -> tf32, .BF16 -> bf16, otherwise fp16 operands
//                              (SASS names no operand type for f16: HMMA.16816.F32 is f16 x f16
//                              accumulated in f32)
//   IMMA / IGMMA / UTCIMMA     -> int8 (int4 operands too)
//   QMMA / QGMMA / UTCQMMA     -> fp8 (E4M3 / E5M2)
//   OMMA / UTCOMMA             -> fp4
//   BMMA                       -> b1
// Plain half-precision ALU instructions (HFMA2, HADD2) are not counted: nvcc uses
// `HFMA2.MMA Rx, -RZ, RZ, c, c` to move constants, which says nothing about the math. DMMA
// (fp64 tensor cores) is full precision. cpu artifacts have no such instructions here: an
// empty report. Pure functions and a sandboxed child; thread-safe.
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

/// Finds the tensor-core instructions of `sass` (cuobjdump -sass / nvdisasm text).
PrecisionReport parse_sass_precision(std::string_view sass);

/// True when detect_precision() inspects `backend`'s artifacts (cuda: its SASS); other backends'
/// lower-precision math is not detected, so what a prompt says of it must not claim so.
bool inspects_precision(const std::string& backend);

/// Inspects `artifact` of `backend` ("cuda": cuobjdump -sass in the sandbox; other backends:
/// an empty, uninspected report). A missing cuobjdump is reported in `error`, never thrown.
PrecisionReport detect_precision(const std::filesystem::path& artifact, const std::string& backend = "cuda");

/// The precision kinds of `found` that fall below `dtypes` (the task's floating dtypes, e.g.
/// {"float32"}) and are not in `allowed`. A float32 task: tf32, fp16, bf16, fp8, fp4, int8, b1
/// are below; a float16 task: fp8, fp4, int8, b1 (bf16 too: fewer mantissa bits); a bfloat16
/// task: fp8, fp4, int8, b1 (fp16 has more mantissa bits but less range: below as well);
/// float64: everything. No floating dtype: nothing is below.
std::set<std::string> disallowed_precision(const std::set<std::string>& found,
                                           const std::set<std::string>& dtypes,
                                           const std::set<std::string>& allowed);

}  // namespace kforge::backends
