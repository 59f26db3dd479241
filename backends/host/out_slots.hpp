// The Triton candidate host's output slots (libkforge_pyseal.so): while a candidate's call runs,
// an allocation whose shape, strides, dtype and device match the current set's next output is
// handed that output's memory (the exchange's), so a result written where PyTorch allocated it
// needs no copy inside the timed window (host.py `run`; the copy of a result elsewhere stays in
// the window). Native, where a Python TorchDispatchMode did this before at 20-40 us of host CPU a
// call (NVIDIA H200 host, stop 35): the BackendSelect kernels of aten::empty.memory_format and
// aten::empty_strided are overridden in the host's process, so every factory allocation
// (empty, empty_like, new_empty, zeros, ...) passes here and, with no slots set, goes on to its
// backend as before (the same redispatch as PyTorch's generated BackendSelect kernel).
// Process-global state behind a mutex (an allocation may come from any thread); `install` once,
// from the host's main thread, before the candidate's code runs.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace kforge::outslots {

/// Registers the two BackendSelect overrides (idempotent; held for the life of the process;
/// PyTorch's "overriding a previously registered kernel" warning is not printed).
void install();

/// The outputs the next allocations may be handed, in order; each is taken at most once. An
/// empty list clears them. Only contiguous, non-empty strided tensors are kept.
void set(std::vector<at::Tensor> outs);

/// How many slots were taken since the last call (and resets the count): diagnostics.
int take_count();

}  // namespace kforge::outslots
