#pragma once
// Prompt rendering (docs/prompts.md says what a prompt contains and when each paragraph
// appears). Templates are files with `{{name}}` placeholders: the
// backend-independent ones under prompts/templates/, a backend's own (system.md, its output
// formats) in its folder, backends/<name>/prompts/ (Backend::prompts_dir(), given in
// PromptInput::backend_prompts); render_prompt() assembles the system message (per backend) and the
// user message: task section (reference, inputs/outputs table, device), exemplars, output
// format (with the kernel ABI, so `--exemplar none` works), the reply's token limit, the
// trajectory (one line per earlier turn and the best kernel so far, within its own token budget)
// and past attempts in full with their feedback (policy `last` or `all`, truncated to a token
// budget at ~4 characters per token), closed by the instruction for the situation: next_turn_repair.md after
// a failed attempt, next_turn_optimise.md after a pass. Pure functions over values; templates are read from
// disk on each call (thread-safe, no shared state).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "kforge/common/outcome.hpp"
#include "kforge/common/profile.hpp"
#include "kforge/prompts/hardware.hpp"
#include "kforge/retrieval/retrieval.hpp"

namespace kforge::prompts {

struct TensorInfo {
  std::string role;  ///< "input" or "output"
  std::string name, kind, dtype;
  std::vector<std::int64_t> shape;
};

/// One past attempt of the episode, as the next prompt shows it. Every earlier turn has its
/// line in the trajectory; history policy `last` shows the last attempt's code and feedback in
/// full, `all` every earlier attempt's (newest first within the token budget).
struct PastAttempt {
  int turn = 1;
  std::string source;  ///< the candidate ("" when the reply had no usable code block)
  Outcome outcome = Outcome::format_error;
  std::string sub_kind;
  std::string detail;  ///< compiler errors with file:line + source line, mismatch summary, crash text
  double speedup = 0;
  double achieved_gbps = 0;
  // --- a pass's profile (issue 11 §2); 0 / empty = not measured --------------------------
  double achieved_tflops = 0;
  double t_candidate_ms = 0, t_candidate_p10_ms = 0, t_candidate_p90_ms = 0;
  double t_reference_ms = 0, t_reference_p10_ms = 0, t_reference_p90_ms = 0;
  double speedup_ci_low = 0, speedup_ci_high = 0;  ///< rendered when both are > 0
  double peak_gbps = 0, peak_tflops = 0;           ///< the device's measured peaks
  std::string bottleneck;                          ///< "memory-bound", "compute-bound", "latency-bound"
  std::string bottleneck_reason;                   ///< one line from the roofline
  std::vector<MetricFinding> findings;             ///< the 3-4 most telling metrics, best first
  std::string profiler_note;                       ///< e.g. "ncu not available: basic profile only"
  std::vector<KernelTime> candidate_kernels;       ///< per kernel of one profiled call (ncu)
  std::vector<KernelTime> reference_kernels;       ///< what PyTorch launches for the reference
  std::string resources;                           ///< compile-time resources, one line per kernel
  std::string timing_anomaly;                      ///< the record's timing_anomaly ("" when none)
  /// Why the times are too noisy to steer by, after a re-timing ("" = stable): the prompt then
  /// says the speedup is unreliable instead of reading it as a gain or a regression.
  std::string timing_unstable;
  /// The run's estimate of the reference (ms: the median of the task's stable reference timings
  /// in the run) and how many timings it rests on; rendered when it rests on 2 or more.
  double t_reference_run_ms = 0;
  int reference_run_timings = 0;
};

/// The correctness tolerance of one output dtype: |actual - expected| <= atol + rtol * |expected|.
struct DtypeTolerance {
  std::string dtype;  ///< "float32", "float16", ...
  double atol = 0;
  double rtol = 0;  ///< atol == rtol == 0: exact
};

enum class HistoryPolicy { last, all };

struct PromptInput {
  std::string backend;  ///< the backend's name ("cpu", "cuda", "triton")
  /// The backend's templates (Backend::prompts_dir(): system.md, output_format.md,
  /// output_format_operator.md, operator_write.md, output_format_tritonbench.md); empty:
  /// backend_templates_dir(backend).
  std::filesystem::path backend_prompts;
  /// The backend's code-fence language and where its kernels run (Backend::prompt_language,
  /// device_type: "cpp"/"cpu", "cuda"/"cuda", "python"/"cuda"): given by the caller, never
  /// derived from the backend's name; the defaults are the cpu backend's.
  std::string language = "cpp";
  std::string device_type = "cpu";
  std::string task_id, category, reference;
  std::string device;      ///< fallback device name when hardware.name is empty ("cuda:0")
  HardwareFacts hardware;  ///< what the prompt states about the machine
  /// How the reference Model runs: "train" (no .eval(): BatchNorm uses the batch's statistics,
  /// Dropout is live) or "eval" (after .eval(): BatchNorm uses its running statistics).
  std::string module_mode = "eval";
  /// How the kernel is judged, one sentence each (trials, tolerances, precision), rendered as a
  /// list in the task section; empty: none stated.
  std::vector<std::string> checks;
  std::vector<TensorInfo> tensors;
  /// One entry per distinct output dtype (the task's tolerance for it); empty: the defaults
  /// of docs/judge.md are stated for each output dtype of `tensors`.
  std::vector<DtypeTolerance> tolerances;
  std::vector<retrieval::Exemplar> exemplars;
  std::vector<PastAttempt> history;  ///< oldest first
  HistoryPolicy policy = HistoryPolicy::last;
  int token_budget = 6000;      ///< for the attempts shown in full, ~4 chars per token
  int trajectory_budget = 400;  ///< for the trajectory's lines, tokens; the oldest go first
  int max_tokens = 0;           ///< the reply's token limit (the run's --max-tokens); 0: not stated
  /// A TritonBench task (judged on its test block): task_tritonbench.md and the backend's
  /// output_format_tritonbench.md replace task.md and the kf_forward format; the
  /// reference (T: the PyTorch implementation; G: none, the gold source is the answer), the
  /// instruction (TritonBench's description), the signature (its func_inputs) and the names the
  /// module must define are stated instead of a tensor table.
  bool test_block = false;
  std::string instruction, signature;
  std::vector<std::string> entries;
  /// An ATen-operator task on a Python backend (issue 24): task_operator.md and the backend's
  /// output_format_operator.md replace task.md and the kf_forward format; the
  /// reference is the generated module calling the operator on every case, entries[0] the
  /// function the module must define (`<op>_kernel_impl`), signature its ATen schema ("" when
  /// PyTorch was not asked or does not know it), cases_table its cases (operator_cases_table).
  /// "" for every other task.
  std::string aten_op, cases_table;
};

struct Prompt {
  std::string system, user;
  std::string markdown() const;  ///< both messages, for prompt.md
};

/// prompts/templates under kforge_home(): the backend-independent templates.
std::filesystem::path templates_dir();

/// backends/<backend>/prompts under kforge_home(): where a built-in backend keeps its templates
/// (Backend::prompts_dir()'s default; the prompts library links no backend, so it knows only
/// this convention and whatever directory the caller gives).
std::filesystem::path backend_templates_dir(const std::string& backend);

/// Replaces every `{{key}}` with its value; unknown placeholders are left as they are.
std::string fill(std::string tmpl, const std::map<std::string, std::string>& values);

/// Reads `<templates_dir>/<name>`; throws std::runtime_error naming the file when missing
/// (a broken installation).
std::string load_template(const std::string& name);

/// Reads the backend's template `name` from in.backend_prompts (empty:
/// backend_templates_dir(in.backend)); throws like load_template.
std::string load_backend_template(const PromptInput& in, const std::string& name);

/// The tolerance docs/judge.md gives a dtype when the task declares none: float32 1e-4,
/// float16/bfloat16 1e-2, float64 1e-8 (atol and rtol); integers and bool exact.
DtypeTolerance default_tolerance(const std::string& dtype);

/// The correctness section's list: one line per distinct output dtype.
std::string render_tolerances(const PromptInput& in);

/// The feedback paragraph for one attempt (feedback_<outcome>.md). For a pass, `best` is the
/// fastest earlier passing attempt of the episode (nullptr: none): its metrics are shown next to
/// this attempt's, with the change.
std::string render_feedback(const PastAttempt& a, const PastAttempt* best = nullptr);

/// The trajectory's best kernel among `history`: the pass with the lowest candidate time (where
/// measured; else the highest speedup). nullptr when none passed.
const PastAttempt* best_pass(const std::vector<PastAttempt>& history);

/// The one-line lesson of attempt `a`: for a failure the first line of its detail; for a pass
/// its time against `best_before` (the best earlier pass, nullptr: none), and its timing anomaly.
std::string lesson(const PastAttempt& a, const PastAttempt* best_before);

/// One trajectory line: "turn 2: pass, 0.556 ms, 0.66x - 7% faster than turn 1 (0.600 ms)".
std::string trajectory_line(const PastAttempt& a, const PastAttempt* best_before);

/// The trajectory section: one line per attempt of `history` (oldest first) and the best kernel
/// so far, within `budget_tokens` (~4 chars each): the oldest lines are dropped first, and the
/// section says how many.
std::string render_trajectory(const std::vector<PastAttempt>& history, int budget_tokens);

/// The module-mode paragraph of the task section ("" when the reference has no module whose
/// behaviour depends on the mode: BatchNorm, Dropout, `self.training`). In training mode with
/// BatchNorm it says that the running statistics must not be updated (they are read-only inputs).
std::string module_mode_paragraph(const std::string& reference, const std::string& module_mode);

Prompt render_prompt(const PromptInput& in);

}  // namespace kforge::prompts
