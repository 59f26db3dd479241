#include "kforge/prompts/prompts.hpp"

#include <cstdio>
#include <stdexcept>

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

std::string load_template(const std::string& name) {
  fs::path p = templates_dir() / name;
  if (!fs::exists(p))
    throw std::runtime_error("prompt template " + p.string() + " is missing (set KFORGE_HOME)");
  return read_file(p);
}

namespace {
std::string lang_of(const std::string& backend) {
  return backend == "cuda" ? "cuda" : "cpp";
}
std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
std::string num(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
}  // namespace

std::string render_feedback(const PastAttempt& a) {
  std::string detail = truncate_middle(trim(a.detail), 3000);
  if (detail.empty()) detail = "(no further detail)";
  return trim(fill(load_template("feedback_" + std::string(to_string(a.outcome)) + ".md"),
                   {{"outcome_words", std::string(describe(a.outcome))},
                    {"sub_kind", a.sub_kind.empty() ? "-" : a.sub_kind},
                    {"detail", detail},
                    {"speedup", a.speedup > 0 ? num(a.speedup, "%.2fx") : "not measured"},
                    {"gbps", a.achieved_gbps > 0 ? num(a.achieved_gbps, "%.2f") : "n/a"}}));
}

Prompt render_prompt(const PromptInput& in) {
  Prompt p;
  p.system = trim(fill(load_template("system_" + in.backend + ".md"), {{"device", in.device}}));
  std::string table;
  int idx = 0;
  for (const auto& t : in.tensors)
    table += "| " + std::to_string(idx++) + " | " + t.role + " | " + t.name + " | " + t.kind + " | " +
             shape_str(t.shape) + " | " + t.dtype + " |\n";
  if (table.empty()) table = "| - | - | (unknown) | - | - | - |\n";
  const std::string mode_words =
      in.module_mode == "train"
          ? "training mode, as its suite's harness runs it: `.eval()` is never called, so BatchNorm "
            "normalises with the statistics of the batch it is given (its running statistics are not "
            "used), and it runs under `torch.no_grad()`"
          : "eval mode (`model.eval()`): BatchNorm normalises with its running statistics, Dropout is "
            "the identity, and it runs under `torch.no_grad()`";
  std::string checks;
  for (const auto& c : in.checks) checks += "- " + c + "\n";
  std::string user =
      fill(load_template("task.md"), {{"task_id", in.task_id},
                                      {"category", in.category.empty() ? "-" : in.category},
                                      {"device", in.device},
                                      {"reference", trim(in.reference)},
                                      {"module_mode", in.module_mode},
                                      {"module_mode_words", mode_words},
                                      {"checks", checks.empty() ? "- (none stated)\n" : checks},
                                      {"tensor_table", table}});
  for (const auto& e : in.exemplars)
    user += "\n" + fill(load_template("exemplar.md"), {{"task_id", e.task_id},
                                                       {"category", e.category},
                                                       {"reference", trim(e.reference)},
                                                       {"lang", lang_of(in.backend)},
                                                       {"kernel", trim(e.kernel)}});
  user += "\n" + load_template("output_format_" + in.backend + ".md");
  if (!in.history.empty()) {
    std::vector<std::string> blocks;
    std::size_t first = in.policy == HistoryPolicy::last ? in.history.size() - 1 : 0;
    for (std::size_t i = first; i < in.history.size(); ++i) {
      const auto& a = in.history[i];
      blocks.push_back(fill(load_template("attempt.md"),
                            {{"turn", std::to_string(a.turn)},
                             {"lang", lang_of(in.backend)},
                             {"source", a.source.empty() ? "// (no code block)" : trim(a.source)},
                             {"feedback", render_feedback(a)}}));
    }
    // Token budget: keep the newest attempts; drop the oldest whole blocks, then truncate.
    const std::size_t budget = static_cast<std::size_t>(std::max(in.token_budget, 256)) * 4;
    std::size_t total = 0;
    std::size_t keep_from = blocks.size();
    while (keep_from > 0 && total + blocks[keep_from - 1].size() <= budget)
      total += blocks[--keep_from].size();
    std::string hist = "\n## Previous attempts\n";
    if (keep_from == blocks.size())
      hist += "\n" + truncate_middle(blocks.back(), budget);
    else {
      if (keep_from > 0) hist += "\n(" + std::to_string(keep_from) + " older attempt(s) omitted)\n";
      for (std::size_t i = keep_from; i < blocks.size(); ++i) hist += "\n" + blocks[i];
    }
    user += hist + "\n" + load_template("next_turn.md");
  }
  p.user = user;
  return p;
}

std::string Prompt::markdown() const {
  return "# system\n\n" + system + "\n\n# user\n\n" + user + "\n";
}

}  // namespace kforge::prompts
