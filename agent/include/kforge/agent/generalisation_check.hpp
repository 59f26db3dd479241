// kforge/agent/generalisation_check.hpp — judges a run's library kernels again on shapes their
// prompts never showed (issue 24 §3: agents hard-code the shapes they see).
//
// For every library kernel (benchmarks' library_kernels: the best correct kernel of each task),
// `kforge eval` — the same attempt pipeline every verdict goes through — judges it once more,
// check only, on the unseen shapes of its task (shapes.hpp's rule: sizes >= 16 grow by 7): a
// KernelBench-format task on profile `<run profile>+unseen`, an operator task on its unseen cases
// (operators.hpp's unseen_cases, written as a trace file). A pass generalises; any model outcome
// does not; a task without unseen shapes (none >= 16, shapes not understood, TritonBench), whose
// reference fails on them, or a judge failure (infra_error) is unknown. The verdicts go to
// <run>/generalisation.json (one per task, naming the judged kernel's source_sha); a verdict for
// the same kernel is reused, so exporting twice judges once. The eval's own run directory is
// <run>/generalisation/eval (its attempts.jsonl is the evidence). Runs at export (`kforge
// library export`), not at the end of `kforge run`: only what leaves the run pays for the check,
// and it can be made later on a run recorded before it existed. One call per run directory at a
// time; not thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::agent {

struct GeneralisationCommand {
  std::filesystem::path run_dir;
  std::string device;  ///< "" = the run's device
  bool again = false;  ///< judge every kernel even when a verdict for it exists
};

struct GeneralisationTally {
  int judged = 0;  ///< judged now (the rest reused)
  int yes = 0, no = 0, unknown = 0;
  int status = 0;  ///< 0, or the eval's exit status when it could not run (2, 3)
};

/// Judges, writes <run>/generalisation.json, prints one line per kernel judged and a summary.
/// A run without library kernels writes an empty verdict list.
GeneralisationTally check_generalisation(const GeneralisationCommand& cmd);

}  // namespace kforge::agent
