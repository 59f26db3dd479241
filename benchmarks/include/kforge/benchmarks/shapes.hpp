// kforge/benchmarks/shapes.hpp — a task's input shapes read from its source, and the scaled
// shape profiles (small, ci) of suites that define none (KernelBench, MultiKernelBench).
//
// Static reading, no Python: the module-level constants that are integer expressions (int
// literals, names of earlier constants, + - * // % **, parentheses, tuples) are evaluated in file
// order, then every `torch.<randn|rand|randint|zeros|ones|empty|full>(...)` call in the body of
// get_inputs() (with its simple local assignments) gives one input tensor: its shape and dtype
// (dtype= keyword; float32 by default, int64 for randint). A call whose shape does not evaluate
// makes the estimate unknown (ok = false), never a guess. It is an estimate of one input set:
// tensors built otherwise (list comprehensions, helper functions) are not seen.
//
// The scaling rule (scale_profile), used for a profile name a task does not define itself:
// every module-level constant given by a literal integer expression ("4096", "2048 * 2", also
// chained `h = w = 256` and unpacked `d, h, w = 16, 32, 32`) that get_inputs() uses (directly, or through
// other constants or its local variables) and that is >= 16 is divided by one power of two f, rounded down
// and kept >= 16 (constants below 16 — kernel sizes, ranks, small counts — stay); f is the smallest power of
// two for which the estimated input bytes fall to the profile's target or below (profile_target_bytes: ci 1
// MiB, small 64 MiB), or the one past which nothing shrinks further. The changed lines are rewritten in place
// (`NAME = VALUE  # profile ci`), so constants derived from them follow. Powers of two keep the divisibility
// that shapes usually rely on (heads dividing a width, even sizes).
//
// Pure functions over strings; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct Task;

struct InputShape {
  std::vector<std::int64_t> dims;
  std::string dtype = "float32";  ///< torch dtype name without "torch."
  std::int64_t elem_bytes = 4;
  double bytes() const;
};

struct ShapeEstimate {
  bool ok = false;                 ///< every input call's shape evaluated (and there was one)
  std::vector<InputShape> inputs;  ///< in source order
  double bytes = 0;                ///< sum of inputs' bytes (when ok)
  std::string note;                ///< why not ok ("" when ok)
  std::string describe() const;    ///< "(64, 6144) float32; (16,) int64", or the note
};

/// The input shapes of a KernelBench-format source (above).
ShapeEstimate estimate_inputs(const std::string& source);

/// Target bytes of one input set for a scaled profile: "ci" 1 MiB, "small" 64 MiB; nullopt for
/// other names (they are never synthesised).
std::optional<double> profile_target_bytes(const std::string& profile);

struct ScaledProfile {
  std::string source;                ///< the task's source with the scaled constants' lines rewritten
  std::vector<std::string> changes;  ///< "batch_size 4096->32", "h = w 256->16"
  std::int64_t factor = 1;           ///< f of the rule (1: already under the target)
  ShapeEstimate before, after;
  std::string note;  ///< "" or why the target was not reached / nothing was scaled
};

/// The scaled profile of `source` for `profile` by the rule above; nullopt when the profile has
/// no target (profile_target_bytes) or the shapes are not understood (estimate not ok).
std::optional<ScaledProfile> scale_profile(const std::string& source, const std::string& profile);

/// The same rule for any target (bytes of one input set); `profile` names the comment of the
/// rewritten lines (`# profile <name>`). The profile step's ncu run uses it for huge inputs
/// (backends/profile: profile_step.hpp, NcuProfilerOptions::scale).
std::optional<ScaledProfile> scale_to_bytes(const std::string& source, double target_bytes,
                                            const std::string& profile);

/// The unseen-shape rule (issue 24 §3: does a kernel hold beyond the shapes its prompt showed?):
/// every size v with 16 <= v < 2^31 becomes v + 7 (unseen_size); smaller values (kernel sizes,
/// ranks, dim indices, small counts) stay. A multiple of 16 becomes odd, so a kernel that
/// hard-codes the shown sizes, or assumes they divide its block size, meets sizes it never saw;
/// the inputs grow by a few percent at most beyond the smallest sizes. Constants equal before
/// stay equal after, so broadcasting and matching dimensions still agree.
std::int64_t unseen_size(std::int64_t v);

/// The unseen profile of `source`: the rule applied to the same constants scale_profile changes
/// (module-level integer literals that get_inputs() uses), lines rewritten as `NAME = VALUE  #
/// profile unseen`. nullopt when the shapes are not understood or no constant is >= 16.
std::optional<ScaledProfile> unseen_profile(const std::string& source);

/// The base of an unseen profile name: "unseen" -> "default", "ci+unseen" -> "ci"; nullopt for
/// any other name. apply_profile(task, "B+unseen") is unseen_profile(apply_profile(task, B)).
std::optional<std::string> unseen_base(const std::string& profile);

/// True when apply_profile can produce `profile` for the task: the task defines it, it is a
/// scaled profile (small, ci) and the task's shapes are understood, or it is "B+unseen" with B
/// available and a constant the rule changes.
bool has_profile(const Task& task, const std::string& profile);

}  // namespace kforge
