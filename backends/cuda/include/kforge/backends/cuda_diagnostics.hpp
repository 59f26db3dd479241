// kforge/backends/cuda_diagnostics.hpp — the cuda backend's compiler message formats for
// parse_diagnostics (diagnostics.hpp): nvcc's front end (`file(line): error: msg`, with its
// "detected during instantiation" context as notes), ptxas (`ptxas error   : msg`), nvlink and
// the nvcc driver. Pure; thread-safe.
#pragma once

#include <vector>

#include "kforge/backends/diagnostics.hpp"

namespace kforge::backends {

/// The dialects CudaBackend::diagnostic_dialects answers.
std::vector<DiagnosticDialect> cuda_diagnostic_dialects();

}  // namespace kforge::backends
