// backends/judge/testblock_gold.hpp — the gold's side of a TritonBench test block, shared by
// testblock_gold.cpp (the reference's runs) and testblock.cpp (the candidate's, compared with
// them); internal to kforge-runner. Leaves are plain values owned by the caller; the worker's
// knowledge of each task's gold lives in testblock_gold.cpp. Single-threaded, as the runner.
#pragma once

#include <string>
#include <vector>

#include "judge_internal.hpp"

namespace kforge::runner {

/// The reference's results under one seed: tensor leaves (held) and the other leaves as JSON;
/// per tensor leaf, the elements the gold determines (undefined: all of them; else a bool
/// tensor: testblock.py gold_agreement, from the gold's own two runs, never the candidate's);
/// why the gold cannot judge ("" when it can); for a Triton reference (TritonBench-G), the
/// PyTorch ops its entry points ran; and the PyTorch ops its test block itself ran, counted by
/// line (op_tally.hpp), the allowance the candidate's counts are held to; the entry points each
/// call of which must launch a Triton kernel (testblock.py must_launch); why stubbed entry
/// points give the gold's results ("" when they do not, or were not tried: stub_verdict); and
/// whether the block's floating literals were drawn fresh (fresh_literals).
struct Leaves {
  std::vector<HeldTensor> tensors;
  std::vector<HeldTensor> masks;
  json others;
  std::string unjudgeable;
  std::vector<std::string> ops;
  json counts;
  std::vector<std::string> launch;
  std::string stubbed;
  bool fresh = false;
};

/// backends/triton/testblock.py, the same code the Triton host runs.
py::object testblock_module(const JudgeContext& ctx);

/// The gold's results under the request's `trials` seeds into `refs`, run twice per seed unless
/// this worker found the gold agreeing with itself wholly before (`twice` says which). The error
/// reply when the gold raised (reference_failed: its traceback) or cannot judge (unjudgeable).
std::optional<json> gold_results(const JudgeContext& ctx, py::object& tb,
                                 const protocol::TestblockRequest& req, const std::string& device,
                                 std::vector<Leaves>& refs, bool& twice);

}  // namespace kforge::runner
