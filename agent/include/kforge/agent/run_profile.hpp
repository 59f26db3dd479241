// kforge/agent/run_profile.hpp — the profile step a run chose (--profiler resolved for its
// backend): the type the attempt pipeline (attempt.hpp) reads and `kforge eval`/`kforge run`
// make (judge_setup.hpp make_profile_step), below both.
//
// One per run, owned by the run and shared by its episodes; the NcuProfiler is used only
// under a runner's lease.
#pragma once

#include <memory>
#include <string>

#include "kforge/backends/profile_step.hpp"

namespace kforge::agent {

/// The profile step of a run (issue 11 §1): the profiler --profiler resolves to for the
/// backend and, for ncu, the profiler itself. One per run, shared by its episodes.
struct ProfileStep {
  std::string profiler = "basic";  ///< none | basic | ncu
  std::string note;                ///< why ncu is not used although it was asked for (or auto)
  bool failing = false;            ///< also profile attempts that ran but failed the check (output_mismatch)
  std::unique_ptr<backends::NcuProfiler> ncu;
};

}  // namespace kforge::agent
