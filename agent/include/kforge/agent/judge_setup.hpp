// kforge/agent/judge_setup.hpp — the judge's view of a task and a device, shared by `kforge eval` and the
// episode loop: the runner's TaskRef of a task, the device's measured peaks and the profile
// step. Free functions over values; device_peaks writes the peaks cache file.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kforge/agent/run_profile.hpp"
#include "kforge/backends/profile_step.hpp"
#include "kforge/backends/runner_client.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/task.hpp"

namespace kforge::agent {

/// The runner's view of a task: its source with `profile` applied and its tolerances.
/// Throws std::invalid_argument naming the task when the profile does not exist for it.
backends::TaskRef task_ref(const Task& task, const std::string& profile);

/// The device's measured peaks (issue 11 §1): from the peaks file (default_peaks_file(),
/// KFORGE_PEAKS_FILE) when it holds `device_name`'s, else measured once by the judge
/// (RunnerClient::measure_peaks) and cached there; nullopt when the measurement failed.
std::optional<DevicePeaks> device_peaks(backends::RunnerClient& runner, const std::string& device_name);

/// The profile step's smaller version of a task with huge inputs (backends::ScaleTaskFn): the
/// shape profiles' scaling rule (benchmarks/shapes.hpp scale_to_bytes, lines marked
/// `# profile ncu`) down to `target_bytes`; nullopt when the shapes are not understood or no
/// constant shrinks.
std::optional<backends::ScaledTask> scale_for_profile(const backends::TaskRef& task, double target_bytes);

/// Resolves `requested` (none | basic | ncu | auto) for `backend`: ncu only for cuda and where
/// ncu is found (backends::find_ncu) with the curated metric set; else basic with a note for
/// cuda ("ncu not found ...: basic profile only"); huge inputs are profiled scaled
/// (scale_for_profile). Without timing (`bench` false: eval's --no-bench; run keeps the
/// profile step, whose peaks and roofline feed its prompts) "auto" is none: the profile
/// step measures, and a check-only eval spent 88% of its slot time under ncu (H100, 14 Triton
/// exemplars); an explicit basic or ncu is kept. Throws std::invalid_argument for an unknown
/// name, std::runtime_error when the metric set cannot be read.
std::unique_ptr<ProfileStep> make_profile_step(const std::string& requested, const std::string& backend,
                                               bool bench = true);

}  // namespace kforge::agent
