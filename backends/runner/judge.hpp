// backends/runner/judge.hpp — the judge's side of a check and a bench (internal to
// kforge-runner; DESIGN.md §4, §6).
//
// Candidate code never runs in this process. For each check and each bench the judge starts
// a fresh kforge-host (CandidateHost), shares inputs and outputs with it (Exchange), and
// keeps everything that decides the verdict to itself: the pristine inputs and parameters,
// the reference's outputs (computed while the host is frozen), the tolerances, the clock.
//
// Check: per trial, fresh inputs under seed+i; the reference runs on the judge's pristine
// copy; the candidate runs on a copy in the exchange; afterwards (host frozen) canaries,
// bitwise input/parameter modification (a NaN where a number was counts), and the outputs
// are checked.
// Bench: the exchange holds K input/output sets (enough bytes that the L2 cache cannot keep
// them); every batch of K calls runs on freshly drawn inputs in an order the judge picks, is
// timed by the judge's clock from the request to the host's reply (the host waits for the
// device before replying; a host that replies early is caught by the verification), and one
// set chosen in secret beforehand is compared with the reference afterwards (a mismatch is
// output_mismatch/bench_only). The host is then killed, and only then is the reference timed
// the same way on inputs the candidate never saw. Functions throw only on the judge's own
// failures (the caller reports them as infra errors).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runner.hpp"

namespace kforge::runner {

struct JudgeContext {
  at::Device device{at::kCPU};
  std::string host_exe;  ///< kforge-host
  int64_t l2_bytes = 0;  ///< the device's L2 (cpu: 0, a fixed working-set target is used)
};

/// The `check` request (runner_client.hpp) for the artifact in req["artifact"].
nlohmann::json check_candidate(const JudgeContext& ctx, LoadedTask& task, const nlohmann::json& req);

/// The `bench` request: the candidate (when req has "artifact") and then the reference.
nlohmann::json bench_candidate(const JudgeContext& ctx, LoadedTask& task, const nlohmann::json& req);

}  // namespace kforge::runner
