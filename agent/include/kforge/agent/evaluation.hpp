// kforge/agent/evaluation.hpp — glue between the task model (benchmarks/), the evaluation
// pipeline (backends/) and the run records (runs/), shared by `kforge eval` and the episode
// loop. Free functions over values; thread-safe.
#pragma once

#include <filesystem>
#include <string>

#include "kforge/backends/evaluate.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

/// The runner's view of a task: its source with `profile` applied and its tolerances.
/// Throws std::invalid_argument naming the task when the profile does not exist for it.
backends::TaskRef task_ref(const Task& task, const std::string& profile);

/// Fills the evaluation part of an attempt record: outcome, sub-kind, first line of the
/// message, timings (ms), correctness and speed figures. Achieved rates use the task's
/// formulas: GB/s = bytes / t, TFLOP/s = flops / t (TritonBench appendix B).
void fill_record(AttemptRecord& rec, const backends::Evaluation& ev, double flops, double bytes);

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
  std::string only;  ///< evaluate only task ids containing this substring
};

/// Runs the command, prints a table to stdout. Failing kernels are results (exit 0); bad
/// arguments, a missing suite, kernels dir or toolchain return non-zero with a message on
/// stderr.
int run_eval(const EvalCommand& cmd);

/// ISO-8601 UTC timestamp with milliseconds, e.g. "2026-11-22T13:50:28.123Z".
std::string utc_now();

}  // namespace kforge::agent
