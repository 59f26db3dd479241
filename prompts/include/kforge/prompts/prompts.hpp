#pragma once
// Prompt rendering (DESIGN.md §7, §8). Templates are files under prompts/templates/ with
// `{{name}}` placeholders; render_prompt() assembles the system message (per backend) and the
// user message: task section (reference, inputs/outputs table, device), exemplars, output
// format, and the history of past attempts with their feedback (policy `last` or `all`,
// truncated to a token budget at ~4 characters per token). Pure functions over values;
// templates are read from disk on each call (thread-safe, no shared state).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kforge/common/outcome.hpp"
#include "kforge/retrieval/retrieval.hpp"

namespace kforge::prompts {

struct TensorInfo {
  std::string role;  ///< "input" or "output"
  std::string name, kind, dtype;
  std::vector<std::int64_t> shape;
};

/// One past attempt of the episode, as the next prompt shows it.
struct PastAttempt {
  int turn = 1;
  std::string source;  ///< the candidate ("" when the reply had no usable code block)
  Outcome outcome = Outcome::format_error;
  std::string sub_kind;
  std::string detail;  ///< compiler errors with file:line + source line, mismatch summary, crash text
  double speedup = 0;
  double achieved_gbps = 0;
};

enum class HistoryPolicy { last, all };

struct PromptInput {
  std::string backend;  ///< "cpu" or "cuda" (selects system_<backend>.md, output_format_<backend>.md)
  std::string task_id, category, reference, device;
  /// How the reference Model runs: "train" (no .eval(): BatchNorm uses the batch's statistics,
  /// Dropout is live) or "eval" (after .eval(): BatchNorm uses its running statistics).
  std::string module_mode = "eval";
  /// How the kernel is judged, one sentence each (trials, tolerances, precision), rendered as a
  /// list in the task section; empty: none stated.
  std::vector<std::string> checks;
  std::vector<TensorInfo> tensors;
  std::vector<retrieval::Exemplar> exemplars;
  std::vector<PastAttempt> history;  ///< oldest first
  HistoryPolicy policy = HistoryPolicy::last;
  int token_budget = 6000;  ///< for the history section, ~4 chars per token
};

struct Prompt {
  std::string system, user;
  std::string markdown() const;  ///< both messages, for prompt.md
};

/// prompts/templates under kforge_home().
std::filesystem::path templates_dir();

/// Replaces every `{{key}}` with its value; unknown placeholders are left as they are.
std::string fill(std::string tmpl, const std::map<std::string, std::string>& values);

/// Reads `<templates_dir>/<name>`; throws std::runtime_error naming the file when missing
/// (a broken installation).
std::string load_template(const std::string& name);

/// The feedback paragraph for one attempt (feedback_<outcome>.md).
std::string render_feedback(const PastAttempt& a);

Prompt render_prompt(const PromptInput& in);

}  // namespace kforge::prompts
