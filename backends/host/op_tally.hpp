// The recorder of PyTorch compute, shared by both sides of the trust boundary: the Triton
// candidate host (libkforge_pyseal.so, over the candidate) and the judge (kforge-runner, over a
// TritonBench reference's test block). One global at::RecordFunction callback per process
// (installed on first use, removed with `uninstall` where timing follows), which sees every ATen
// op that enters the dispatcher at the outermost level, as a TorchDispatchMode would: ops that
// have only a CompositeImplicitAutograd kernel are transparent (their parts count), ops nested
// inside a counted op do not count. Two ways to arm it:
//  - `run`: every op outside the allow-list is "seen" (a torch_fallback of a `run` request);
//  - `test`: every op outside the allow-list is counted under the line of the innermost frame
//    on its thread's Python stack that executes one of the registered code objects (a test
//    block's, compiled by the caller), or under "outside" when no such frame is on the stack
//    (another thread, code the test block did not call). The judge compares the candidate's
//    counts with the reference's, line by line (backends/judge/testblock.cpp): whatever a candidate does, its
//    PyTorch compute lands on some line or outside, where the reference's test block ran less.
// State is process-global and lives only here (native memory). Arming, code registration and
// the allow-list are changed by one thread while nothing is armed; the callback may fire on any
// thread (a mutex guards the counts; in `test` mode it takes the GIL to read frames).
#pragma once

#include <Python.h>

#include <string>
#include <vector>

namespace kforge::optally {

/// Installs the global callback (idempotent) and computes the transparent ops from the
/// dispatcher (those with a CompositeImplicitAutograd kernel and no CPU or CUDA kernel).
void install();
/// Removes the global callback (ops pay nothing for it afterwards); `install` may follow.
void uninstall();

/// Adds bare op names ("empty", "copy_"; "aten.add" is taken as "add") to the allow-list.
void allow(const std::vector<std::string>& ops);

/// `run` mode: armed while `on` (nests); `take_seen` returns the ops seen since the last take as
/// a JSON string ("\"aten.add,aten.relu\"", "\"\"" for none) and forgets them.
void arm_run(bool on);
std::string take_seen();

/// `test` mode: registers `code` and every code object nested in its constants (strong
/// references, held until the next begin_test), forgets earlier counts and arms. Call with the
/// GIL held.
void begin_test(PyObject* code);
/// Ops inside a paused stretch are not counted (the judge's side pauses while the reference's
/// own entry points run: the candidate's entry points get no allowance). Nests.
void pause_test(bool on);
/// Disarms and returns the counts as compact JSON: {"L12":{"aten.relu":2},"outside":{...}}.
std::string end_test();

}  // namespace kforge::optally
