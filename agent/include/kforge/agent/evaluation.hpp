// kforge/agent/evaluation.hpp — glue between the task model (benchmarks/), the evaluation
// pipeline (backends/) and the run records (runs/), shared by `kforge eval` and the episode
// loop. Free functions over values; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "kforge/backends/evaluate.hpp"
#include "kforge/benchmarks/roofline.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

/// The runner's view of a task: its source with `profile` applied and its tolerances.
/// Throws std::invalid_argument naming the task when the profile does not exist for it.
backends::TaskRef task_ref(const Task& task, const std::string& profile);

/// Fills the evaluation part of an attempt record: outcome, sub-kind, first line of the
/// message, timings (ms), correctness and speed figures, compile-time resources (cuda). Achieved rates use
/// the task's formulas: GB/s = bytes / t, TFLOP/s = flops / t (TritonBench appendix B).
void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes);

/// For a cuda attempt that compiled (rec.backend == "cuda"): runs cuobjdump on the artifact
/// through the sandbox and records per-kernel registers, stack, static shared memory and, when
/// the build log has ptxas -v output, spill bytes in rec.profile (a missing tool is a note).
/// fill_record calls it.
void record_resources(AttemptRecord& rec, const backends::Evaluation& ev);

/// The roofline reading of a pass (benchmarks/roofline.hpp) against the device's measured
/// peaks: fractions of peak, bottleneck class and its reason in rec.profile. No peaks or no
/// time: the fields stay unknown.
void record_roofline(AttemptRecord& rec, const std::optional<DevicePeaks>& peaks, double flops, double bytes);

/// The bytes a call moves: the suite's formula when it has one (lr.bytes > 0), else every
/// input read once and every output written once (io_bytes).
double task_bytes(const backends::LoadResult& lr);

/// `kforge eval`: evaluates existing kernels DIR/<task-id>/kernel.{cpp,cu} (no LLM).
struct EvalCommand {
  std::string suite;  ///< built-in suite name or directory
  std::string backend = "cpu";
  std::filesystem::path kernels;
  std::filesystem::path out;
  std::string profile;  ///< "" = the default shapes
  int trials = 5;
  bool bench = true;
  int reps = 100;
  std::string arch;    ///< cuda target, "" = detect
  std::string device;  ///< "" = cpu for the cpu backend, cuda:0 for cuda
  std::string baseline = "eager";
  std::string only;               ///< evaluate only task ids containing this substring
  std::string profiler = "auto";  ///< none | basic | ncu | auto (ncu where it works, else basic)
};

/// Runs the command, prints a table to stdout. Failing kernels are results (exit 0); bad
/// arguments, a missing suite, kernels dir or toolchain return non-zero with a message on
/// stderr.
int run_eval(const EvalCommand& cmd);

/// ISO-8601 UTC timestamp with milliseconds, e.g. "2026-11-22T13:50:28.123Z".
std::string utc_now();

}  // namespace kforge::agent
