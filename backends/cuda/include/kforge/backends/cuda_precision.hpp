// kforge/backends/cuda_precision.hpp — the cuda backend's precision inspection (precision.hpp,
// docs/judge.md).
//
// A cuda artifact's embedded cubins are disassembled (`cuobjdump -sass`, run in the sandbox) and
// its tensor-core instructions read with their operand types:
//   HMMA / HGMMA / UTCHMMA     .TF32 -> tf32, .BF16 -> bf16, otherwise fp16 operands
//                              (SASS names no operand type for f16: HMMA.16816.F32 is f16 x f16
//                              accumulated in f32)
//   IMMA / IGMMA / UTCIMMA     -> int8 (int4 operands too)
//   QMMA / QGMMA / UTCQMMA     -> fp8 (E4M3 / E5M2)
//   OMMA / UTCOMMA             -> fp4
//   BMMA                       -> b1
// Plain half-precision ALU instructions (HFMA2, HADD2) are not counted: nvcc uses
// `HFMA2.MMA Rx, -RZ, RZ, c, c` to move constants, which says nothing about the math. DMMA
// (fp64 tensor cores) is full precision. The cuda backend's Backend::inspect_precision is
// sass_precision(). Pure functions and a sandboxed child; thread-safe.
#pragma once

#include <filesystem>
#include <string_view>

#include "kforge/backends/precision.hpp"

namespace kforge::backends {

/// Finds the tensor-core instructions of `sass` (cuobjdump -sass / nvdisasm text).
PrecisionReport parse_sass_precision(std::string_view sass);

/// Disassembles `artifact` with cuobjdump -sass in the sandbox and parses it. A missing
/// cuobjdump or a failed disassembly is reported in `error`, never thrown; an artifact without
/// device code is an inspected, empty report.
PrecisionReport sass_precision(const std::filesystem::path& artifact);

}  // namespace kforge::backends
