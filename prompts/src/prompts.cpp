#include "kforge/prompts/prompts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <stdexcept>

#include "kforge/common/tolerance.hpp"
#include "kforge/common/util.hpp"

namespace kforge::prompts {

namespace fs = std::filesystem;

std::filesystem::path templates_dir() {
  return kforge_home() / "prompts" / "templates";
}

std::string fill(std::string tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  std::size_t i = 0;
  while (i < tmpl.size()) {
    std::size_t open = tmpl.find("{{", i);
    if (open == std::string::npos) break;
    std::size_t close = tmpl.find("}}", open + 2);
    if (close == std::string::npos) break;
    out.append(tmpl, i, open - i);
    auto it = values.find(tmpl.substr(open + 2, close - open - 2));
    if (it != values.end())
      out += it->second;
    else
      out.append(tmpl, open, close + 2 - open);
    i = close + 2;
  }
  out.append(tmpl, i, std::string::npos);
  return out;
}

std::filesystem::path backend_templates_dir(const std::string& backend) {
  return kforge_home() / "backends" / backend / "prompts";
}

namespace {
std::string read_template(const fs::path& p) {
  if (!fs::exists(p))
    throw std::runtime_error("prompt template " + p.string() + " is missing (set KFORGE_HOME)");
  return read_file(p);
}
}  // namespace

std::string load_template(const std::string& name) {
  return read_template(templates_dir() / name);
}

std::string load_backend_template(const PromptInput& in, const std::string& name) {
  return read_template((in.backend_prompts.empty() ? backend_templates_dir(in.backend) : in.backend_prompts) /
                       name);
}

namespace {
/// Whether the backend's kernels run on a GPU (PromptInput::device_type, as the caller gives it).
bool on_gpu(const PromptInput& in) {
  return in.device_type != "cpu";
}
std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace

namespace {
std::string us(double ms) {
  return format_double(ms * 1e3 < 100 ? "%.1f" : "%.0f", ms * 1e3);
}
std::string value_str(double v, const std::string& unit) {
  std::string n = std::abs(v) >= 100 ? format_double("%.0f", v) : format_double("%.1f", v);
  if (unit == "%") return n + "%";
  return unit.empty() ? n : n + " " + unit;
}
const MetricFinding* same_metric(const std::vector<MetricFinding>& v, const MetricFinding& m) {
  for (const auto& x : v)
    if (x.label == m.label) return &x;
  return nullptr;
}

/// "name 12.3 us, name2 4.0 us x3, ... (+N more)": the kernels of one call, longest first.
std::string kernel_list(std::vector<KernelTime> k, std::size_t max) {
  std::stable_sort(k.begin(), k.end(), [](const auto& x, const auto& y) { return x.ms > y.ms; });
  std::string s;
  for (std::size_t i = 0; i < k.size() && i < max; ++i) {
    std::string name = kernel_display_name(k[i].name);
    if (name.size() > 60) name = name.substr(0, 40) + "..." + name.substr(name.size() - 17);  // both ends
    s += (i ? ", " : "") + name + " " + us(k[i].ms) + " us";
    if (k[i].launches > 1) s += " x" + std::to_string(k[i].launches);
  }
  if (k.size() > max) s += " (+" + std::to_string(k.size() - max) + " more)";
  return s;
}

/// "- time: ... : speedup ..." with the run's estimate of the reference, where earlier benches
/// of the task measured it, and whether these times can be compared with earlier turns' at all
/// (docs/judge.md).
std::string time_lines(const PastAttempt& a) {
  std::string d;
  std::string sp = a.speedup > 0 ? format_double("%.2fx", a.speedup) : "not measured";
  if (a.speedup_ci_low > 0 && a.speedup_ci_high > 0)
    sp += " (95% CI " + format_double("%.2f", a.speedup_ci_low) + "-" +
          format_double("%.2fx", a.speedup_ci_high) + ")";
  if (a.t_candidate_ms > 0) {
    d += "- time: " + us(a.t_candidate_ms) + " us";
    if (a.t_candidate_p10_ms > 0)
      d += " (p10 " + us(a.t_candidate_p10_ms) + ", p90 " + us(a.t_candidate_p90_ms) + ")";
    if (a.t_reference_ms > 0) {
      d += " vs PyTorch eager " + us(a.t_reference_ms) + " us";
      if (a.t_reference_p10_ms > 0)
        d += " (p10 " + us(a.t_reference_p10_ms) + ", p90 " + us(a.t_reference_p90_ms) + ")";
    }
    d += ": speedup " + sp + "\n";
  } else {
    d += "- Speedup over PyTorch eager: " + sp + "\n";
  }
  if (a.reference_run_timings >= 2 && a.t_reference_run_ms > 0 && a.t_candidate_ms > 0)
    d += "- PyTorch eager over this run: " + us(a.t_reference_run_ms) + " us (median of " +
         std::to_string(a.reference_run_timings) + " stable timings): speedup " +
         format_double("%.2fx", a.t_reference_run_ms / a.t_candidate_ms) + " against it\n";
  if (!a.timing_unstable.empty())
    d += "- timing unreliable: " + truncate_middle(a.timing_unstable, 240) +
         "; do not read this speedup as a gain or a regression\n";
  return d;
}

/// The rates against the measured peaks, and the bottleneck.
std::string rate_lines(const PastAttempt& a) {
  std::string d;
  if (a.achieved_gbps > 0 || a.achieved_tflops > 0) {
    std::string r = "- achieved: ";
    if (a.achieved_gbps > 0) {
      r += format_double("%.2f", a.achieved_gbps) + " GB/s";
      if (a.peak_gbps > 0)
        r += " (" + format_double("%.0f", 100 * a.achieved_gbps / a.peak_gbps) + "% of the measured " +
             format_double("%.0f", a.peak_gbps) + " GB/s)";
    }
    if (a.achieved_tflops > 0) {
      r += std::string(a.achieved_gbps > 0 ? ", " : "") + format_double("%.2f", a.achieved_tflops) +
           " TFLOP/s";
      if (a.peak_tflops > 0)
        r += " (" + format_double("%.0f", 100 * a.achieved_tflops / a.peak_tflops) + "% of the measured " +
             format_double("%.1f", a.peak_tflops) + ")";
    }
    d += r + "\n";
  }
  if (!a.bottleneck.empty() && a.bottleneck != "unknown")
    d += "- bottleneck: " + a.bottleneck +
         (a.bottleneck_reason.empty() ? "" : " (" + a.bottleneck_reason + ")") + "\n";
  return d;
}

/// The telling metrics, with the best earlier attempt's values.
std::string finding_lines(const PastAttempt& a, const PastAttempt* best) {
  if (a.findings.empty()) return "";
  const bool with_best = best && !best->findings.empty();
  std::string d = "- telling metrics" +
                  (with_best ? " (this attempt; best so far: turn " + std::to_string(best->turn) + ", " +
                                   format_double("%.2fx", best->speedup) + ")"
                             : std::string()) +
                  ":\n";
  for (const auto& m : a.findings) {
    d += "  - " + m.label + ": " + value_str(m.value, m.unit);
    if (with_best) {
      if (const auto* b = same_metric(best->findings, m))
        d += " (best " + value_str(b->value, b->unit) + ", change " + (m.value >= b->value ? "+" : "") +
             value_str(m.value - b->value, m.unit) + ")";
      else
        d += " (not among the best attempt's findings)";
    }
    d += " - " + m.interpretation + "\n";
  }
  return d;
}

std::string pass_details(const PastAttempt& a, const PastAttempt* best) {
  std::string d = time_lines(a) + rate_lines(a) + finding_lines(a, best);
  if (!a.candidate_kernels.empty()) {
    d += "- kernels of one call (Nsight Compute): " + kernel_list(a.candidate_kernels, 5) + "\n";
    if (!a.reference_kernels.empty())
      d += "- PyTorch's kernels for the reference: " + kernel_list(a.reference_kernels, 5) + "\n";
  }
  if (!a.resources.empty()) {
    auto lines = split_lines(trim(a.resources));
    d += "- compile resources: " + (lines.size() == 1 ? lines[0] + "\n" : std::string("\n"));
    if (lines.size() > 1)
      for (std::size_t i = 0; i < lines.size() && i < 4; ++i) d += "  - " + lines[i] + "\n";
  }
  if (!a.profiler_note.empty()) d += "- profiler: " + a.profiler_note + "\n";
  d += "Make it faster while keeping it correct.";
  return d;
}
}  // namespace

std::string render_feedback(const PastAttempt& a, const PastAttempt* best) {
  std::string detail = truncate_middle(trim(a.detail), 3000);
  if (detail.empty()) detail = "(no further detail)";
  return trim(fill(load_template("feedback_" + std::string(to_string(a.outcome)) + ".md"),
                   {{"outcome_words", std::string(describe(a.outcome))},
                    {"sub_kind", a.sub_kind.empty() ? "-" : a.sub_kind},
                    {"detail", detail},
                    {"details", a.outcome == Outcome::pass ? pass_details(a, best) : detail},
                    {"speedup", a.speedup > 0 ? format_double("%.2fx", a.speedup) : "not measured"},
                    {"gbps", a.achieved_gbps > 0 ? format_double("%.2f", a.achieved_gbps) : "n/a"}}));
}

const PastAttempt* best_pass(const std::vector<PastAttempt>& history) {
  const PastAttempt* best = nullptr;
  for (const auto& h : history) {
    if (h.outcome != Outcome::pass) continue;
    if (!best) {
      best = &h;
    } else if (h.t_candidate_ms > 0 && best->t_candidate_ms > 0) {
      if (h.t_candidate_ms < best->t_candidate_ms) best = &h;
    } else if (h.speedup > best->speedup) {
      best = &h;
    }
  }
  return best;
}

namespace {
std::string ms_str(double ms) {
  return ms <= 0 ? "time not measured" : format_double(ms < 10 ? "%.3f ms" : "%.1f ms", ms);
}
}  // namespace

std::string lesson(const PastAttempt& a, const PastAttempt* best_before) {
  if (a.outcome != Outcome::pass) {
    auto lines = split_lines(trim(a.detail));
    return lines.empty() ? std::string(describe(a.outcome)) : truncate_middle(trim(lines[0]), 160);
  }
  std::string s;
  if (!best_before) {
    s = "first correct kernel";
  } else if (a.t_candidate_ms > 0 && best_before->t_candidate_ms > 0) {
    const double change =
        100 * (best_before->t_candidate_ms - a.t_candidate_ms) / best_before->t_candidate_ms;
    s = format_double("%.0f", std::abs(change)) + (change >= 0 ? "% faster than" : "% slower than") +
        " the best before it (turn " + std::to_string(best_before->turn) + ", " +
        ms_str(best_before->t_candidate_ms) + ")";
  } else {
    s = std::string(a.speedup > best_before->speedup ? "faster" : "not faster") +
        " than the best before it (turn " + std::to_string(best_before->turn) + ", " +
        format_double("%.2fx", best_before->speedup) + ")";
  }
  if (!a.bottleneck.empty() && a.bottleneck != "unknown") s += "; " + a.bottleneck;
  if (!a.timing_anomaly.empty()) s += "; timing unreliable (" + a.timing_anomaly + ")";
  return s;
}

std::string trajectory_line(const PastAttempt& a, const PastAttempt* best_before) {
  std::string s = "turn " + std::to_string(a.turn) + ": " + std::string(to_string(a.outcome));
  if (!a.sub_kind.empty()) s += " (" + a.sub_kind + ")";
  if (a.outcome == Outcome::pass)
    s += ", " + ms_str(a.t_candidate_ms) + ", " +
         (a.speedup > 0 ? format_double("%.2fx", a.speedup) : "speedup not measured");
  return s + " - " + lesson(a, best_before);
}

std::string render_trajectory(const std::vector<PastAttempt>& history, int budget_tokens) {
  if (history.empty()) return "";
  std::vector<std::string> lines;
  std::vector<PastAttempt> before;
  for (const auto& h : history) {
    lines.push_back("- " + trajectory_line(h, best_pass(before)) + "\n");
    before.push_back(h);
  }
  std::string best_line = "Best kernel so far: none has passed yet.\n";
  if (const PastAttempt* b = best_pass(history))
    best_line = "Best kernel so far: turn " + std::to_string(b->turn) + ", " + ms_str(b->t_candidate_ms) +
                ", " + (b->speedup > 0 ? format_double("%.2fx", b->speedup) : "speedup not measured") + ".\n";
  const std::size_t budget = static_cast<std::size_t>(std::max(budget_tokens, 64)) * 4;
  std::size_t total = best_line.size(), keep_from = lines.size();
  while (keep_from > 0 && total + lines[keep_from - 1].size() <= budget) total += lines[--keep_from].size();
  if (keep_from == lines.size()) keep_from = lines.size() - 1;  // the newest line always
  std::string out = "### Trajectory (one line per earlier turn, oldest first)\n\n";
  if (keep_from > 0)
    out += "- (" + std::to_string(keep_from) + " older turn(s) omitted to fit the trajectory's " +
           std::to_string(std::max(budget_tokens, 64)) + "-token budget)\n";
  for (std::size_t i = keep_from; i < lines.size(); ++i) out += lines[i];
  return out + "\n" + best_line;
}

std::string module_mode_paragraph(const std::string& reference, const std::string& module_mode) {
  static const std::regex batchnorm(R"(BatchNorm[123]?d|batch_norm)");
  static const std::regex dropout(R"(Dropout|dropout)");
  const bool bn = std::regex_search(reference, batchnorm);
  const bool drop = std::regex_search(reference, dropout);
  const bool training = reference.find("self.training") != std::string::npos;
  if (!bn && !drop && !training) return "";
  if (module_mode == "train") {
    std::string s =
        "The reference Model runs in **training mode**, as its suite's harness runs it (`.eval()` is never "
        "called), under `torch.no_grad()`.";
    if (bn)
      s += " BatchNorm normalises with the statistics of the batch it is given (the biased variance), not "
           "with its running statistics. Do not update the running statistics (`running_mean`, "
           "`running_var`, `num_batches_tracked`): they are inputs of your kernel, read-only like every "
           "input, and the judge compares them bit for bit with their values after every call.";
    return s + " Your kernel must compute what the Model computes in that mode.\n\n";
  }
  std::string s = "The reference Model runs in **eval mode** (`model.eval()`), under `torch.no_grad()`.";
  if (bn) s += " BatchNorm normalises with its running statistics (inputs of your kernel).";
  if (drop) s += " Dropout is the identity.";
  return s + " Your kernel must compute what the Model computes in that mode.\n\n";
}

DtypeTolerance default_tolerance(const std::string& dtype) {
  const AtolRtol t = kernelbench_tolerance(dtype);
  return {dtype, t.atol, t.rtol};
}

std::string render_tolerances(const PromptInput& in) {
  std::vector<DtypeTolerance> tols = in.tolerances;
  if (tols.empty()) {
    for (const auto& t : in.tensors) {
      if (t.role != "output") continue;
      bool seen = false;
      for (const auto& d : tols) seen = seen || d.dtype == t.dtype;
      if (!seen) tols.push_back(default_tolerance(t.dtype));
    }
  }
  if (tols.empty()) tols.push_back(default_tolerance("float32"));
  std::string s;
  for (const auto& t : tols) {
    if (t.atol == 0 && t.rtol == 0)
      s += "- " + t.dtype + " outputs: exact (every element equal)\n";
    else
      s += "- " + t.dtype + " outputs: atol " + format_double("%g", t.atol) + ", rtol " +
           format_double("%g", t.rtol) + "\n";
  }
  return s;
}

namespace {

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
std::string names_words(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + ("`" + names[i] + "`");
  return out.empty() ? "`kf_forward`" : out;
}

/// The task section of a TritonBench task (judged on its test block): the instruction, the
/// function(s) to write with the stated signature, the PyTorch reference for T.
std::string testblock_task_section(const PromptInput& in, const std::string& hardware,
                                   const std::string& checks) {
  const bool one = in.entries.size() == 1;
  std::string reference;
  if (!in.reference.empty())
    reference = "\nReference implementation (PyTorch; your module replaces it):\n\n```python\n" +
                trim(in.reference) + "\n```\n";
  return fill(
      load_template("task_tritonbench.md"),
      {{"task_id", in.task_id},
       {"hardware", hardware},
       {"instruction",
        in.instruction.empty() ? "(TritonBench gives no instruction for this task.)" : trim(in.instruction)},
       {"entries_words", (one ? "the function " : "the names ") + names_words(in.entries)},
       {"signature_words",
        in.signature.empty() ? "." : " with the signature\n\n```python\n" + trim(in.signature) + "\n```\n"},
       {"reference_block", reference},
       {"checks", checks}});
}

/// What the operator task asks for, in the backend's own words (its operator_write.md, e.g. a
/// Triton `<op>_kernel_impl(*args, **kwargs)`, or a C++ / CUDA C++ `extern "C" int
/// <op>_kernel_impl(...)` of kernel_abi.h), one line.
std::string operator_write(const PromptInput& in) {
  const std::string e = in.entries.empty() ? "kf_forward" : in.entries.front();
  return trim(fill(load_backend_template(in, "operator_write.md"), {{"entry", e}}));
}

/// The task section of an ATen-operator task: the overload, the function to write, its cases
/// (the generated module) and the checks.
std::string operator_task_section(const PromptInput& in, const std::string& hardware,
                                  const std::string& checks) {
  return fill(
      load_template("task_operator.md"),
      {{"task_id", in.task_id},
       {"hardware", hardware},
       {"aten_op", in.aten_op},
       {"schema", in.signature.empty() ? "(unknown: PyTorch was not asked, or does not know this overload)"
                                       : "`" + in.signature + "`"},
       {"cases_table", trim(in.cases_table)},
       {"entry", in.entries.empty() ? "kf_forward" : in.entries.front()},
       {"write", operator_write(in)},
       {"reference", trim(in.reference)},
       {"checks", checks}});
}

}  // namespace

namespace {

/// One attempt in full: its code and its feedback (attempt.md).
std::string attempt_block(const PromptInput& in, const PastAttempt& a, const PastAttempt* best) {
  return fill(load_template("attempt.md"),
              {{"turn", std::to_string(a.turn)},
               {"lang", in.language},
               {"source", a.source.empty() ? "// (no code block)" : trim(a.source)},
               {"feedback", render_feedback(a, best)}});
}

/// The fastest pass among the first `n` attempts of `h` by speedup (the feedback's "best so far").
const PastAttempt* fastest_of_first(const std::vector<PastAttempt>& h, std::size_t n) {
  const PastAttempt* best = nullptr;
  for (std::size_t i = 0; i < n; ++i)
    if (h[i].outcome == Outcome::pass && h[i].speedup > 0 && (!best || h[i].speedup > best->speedup))
      best = &h[i];
  return best;
}

/// "## Previous attempts": the trajectory, then the attempts in full (policy last: the last;
/// all: every one, newest first while the token budget lasts, shown oldest first), then the
/// closing instruction for the situation.
std::string history_section(const PromptInput& in) {
  const auto& h = in.history;
  const std::size_t budget = static_cast<std::size_t>(std::max(in.token_budget, 256)) * 4;
  std::vector<std::string> blocks;  // newest first
  std::size_t total = 0;
  for (std::size_t i = h.size(); i-- > 0;) {
    std::string b = attempt_block(in, h[i], fastest_of_first(h, i));
    if (blocks.empty()) {
      b = truncate_middle(b, budget);
    } else if (total + b.size() > budget) {
      break;
    }
    total += b.size();
    blocks.push_back(std::move(b));
    if (in.policy == HistoryPolicy::last) break;
  }
  std::string out = "\n## Previous attempts\n\n" + render_trajectory(h, in.trajectory_budget);
  if (in.policy == HistoryPolicy::all && blocks.size() < h.size())
    out += "\n(" + std::to_string(h.size() - blocks.size()) +
           " older attempt(s) not shown in full: the token budget for attempts is spent)\n";
  for (std::size_t i = blocks.size(); i-- > 0;) out += "\n" + blocks[i];
  const bool passed = h.back().outcome == Outcome::pass;
  return out + "\n" + load_template(passed ? "next_turn_optimise.md" : "next_turn_repair.md");
}

}  // namespace

Prompt render_prompt(const PromptInput& in) {
  Prompt p;
  std::string device = device_line(in.hardware);
  if (device.empty()) device = in.device;
  const std::string simd = in.hardware.simd.empty() ? "the host's vector ISA" : in.hardware.simd;
  const std::string omp =
      in.hardware.omp_threads > 0 ? std::to_string(in.hardware.omp_threads) : "all hardware";
  p.system = trim(fill(load_backend_template(in, "system.md"),
                       {{"device", device}, {"simd", simd}, {"omp_threads", omp}}));
  std::string table;
  int idx = 0;
  for (const auto& t : in.tensors)
    table += "| " + std::to_string(idx++) + " | " + t.role + " | " + t.name + " | " + t.kind + " | " +
             shape_str(t.shape) + " | " + t.dtype + " |\n";
  if (table.empty()) table = "| - | - | (unknown) | - | - | - |\n";
  std::string hardware = in.hardware.name.empty() && !in.device.empty() ? "- device: " + in.device + "\n"
                                                                        : describe(in.hardware);
  std::string checks;
  for (const auto& c : in.checks) checks += "- " + c + "\n";
  checks = checks.empty() ? "" : "How your kernel is judged:\n\n" + checks;
  std::string user =
      !in.aten_op.empty() ? operator_task_section(in, hardware, checks)
      : in.test_block     ? testblock_task_section(in, hardware, checks)
                          : fill(load_template("task.md"),
                                 {{"task_id", in.task_id},
                                  {"category", in.category.empty() ? "-" : in.category},
                                  {"device", device},
                                  {"hardware", hardware},
                                  {"reference", trim(in.reference)},
                                  {"module_mode_paragraph", module_mode_paragraph(in.reference, in.module_mode)},
                                  {"checks", checks},
                                  {"tensor_table", table},
                                  {"tolerances", render_tolerances(in)}});
  for (const auto& e : in.exemplars)
    user += "\n" +
            fill(load_template("exemplar.md"),
                 {{"task_id", e.task_id},
                  {"category", e.category},
                  {"chosen_for", e.reason.empty() ? "" : "; chosen for: " + e.reason},
                  {"reference", e.reference.empty() ? "# (reference source unavailable)" : trim(e.reference)},
                  {"lang", in.language},
                  {"kernel", trim(e.kernel)}});
  const std::string abi =
      fill(load_template("abi.md"),
           {{"data_where", on_gpu(in) ? "device pointer (host for device == -1)" : "host pointer"}});
  if (!in.aten_op.empty())
    user += "\n" + fill(load_backend_template(in, "output_format_operator.md"),
                        {{"entry", in.entries.empty() ? "kf_forward" : in.entries.front()}});
  else if (in.test_block)
    user += "\n" + fill(load_backend_template(in, "output_format_tritonbench.md"),
                        {{"entries", names_words(in.entries)}});
  else
    user += "\n" + fill(load_backend_template(in, "output_format.md"), {{"abi", abi}, {"simd", simd}});
  if (in.max_tokens > 0)
    user += "\n" + fill(load_template("reply_limit.md"), {{"max_tokens", std::to_string(in.max_tokens)}});
  if (!in.history.empty()) user += history_section(in);
  p.user = user;
  return p;
}

std::string Prompt::markdown() const {
  return "# system\n\n" + system + "\n\n# user\n\n" + user + "\n";
}

}  // namespace kforge::prompts
