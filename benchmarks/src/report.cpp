#include "kforge/benchmarks/report.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "candidate_file.hpp"
#include "kforge/benchmarks/generalisation.hpp"
#include "kforge/benchmarks/operators.hpp"
#include "kforge/common/beneath.hpp"
#include "kforge/common/json_text.hpp"
#include "kforge/common/utf8.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/run_dir.hpp"

namespace kforge {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kNone = "–";

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string frac(double v) {
  return std::isfinite(v) ? fmt("%.3f", v) : kNone;
}
std::string speed(double v) {
  return std::isfinite(v) && v > 0 ? fmt("%.2fx", v) : kNone;
}
std::string ms(double v) {
  return std::isfinite(v) && v > 0 ? fmt("%.3f", v) : kNone;
}
std::string usd(double v) {
  return fmt("%.4f", v);
}
std::string pct(double v) {
  return fmt("%.1f%%", 100 * v);
}

template <class K>
std::string at(const std::map<K, double>& m, K k) {
  auto it = m.find(k);
  return it == m.end() ? std::string(kNone) : frac(it->second);
}

std::string signed_delta(const std::map<int, double>& a, const std::map<int, double>& b, int k) {
  auto ia = a.find(k), ib = b.find(k);
  if (ia == a.end() || ib == b.end()) return kNone;
  return fmt("%+.3f", ib->second - ia->second);
}

/// Markdown table writer.
struct Table {
  std::ostringstream& os;
  explicit Table(std::ostringstream& o, const std::vector<std::string>& header) : os(o) {
    row(header);
    os << "|";
    for (std::size_t i = 0; i < header.size(); ++i) os << (i == 0 ? " --- |" : " ---: |");
    os << "\n";
  }
  void row(const std::vector<std::string>& cells) {
    os << "|";
    for (const auto& c : cells) os << " " << c << " |";
    os << "\n";
  }
};

/// The ks that appear in a Scores (a k larger than every n is absent).
std::vector<int> all_ks(const Summary& s, const Scores& sc) {
  std::vector<int> out;
  for (int k : s.config.ks)
    if (sc.pass_at_k.count(k)) out.push_back(k);
  return out;
}

/// The ks of the wide tables: k <= 10 and the largest (the pass@k table lists every k).
std::vector<int> present_ks(const Summary& s, const Scores& sc) {
  std::vector<int> out, all = all_ks(s, sc);
  for (int k : all)
    if (k <= 10 || k == all.back()) out.push_back(k);
  return out;
}

std::string duration(double sec) {
  if (!(sec > 0)) return kNone;
  if (sec < 60) return fmt("%.1f s", sec);
  const long t = std::lround(sec);
  char buf[64];
  if (t < 3600)
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld h %02ld min", t / 3600, (t % 3600) / 60);
  return buf;
}

void settings_section(std::ostringstream& os, const RunInfo& info) {
  os << "\n## Run\n\n";
  if (info.wall_from_manifest)
    os << "Wall time " << duration(info.wall_s) << " (the run's, from its start"
       << (info.resumes ? ", summed over " + std::to_string(info.resumes + 1) + " invocations" : "")
       << "); attempts' own time " << duration(info.attempts_s) << " summed.\n";
  else if (!info.started_at.empty())
    os << "Wall time " << duration(info.wall_s) << " (" << info.started_at << " to " << info.finished_at
       << (info.resumes ? ", resumed " + std::to_string(info.resumes) + " time(s): pauses included" : "")
       << "); attempts' own time " << duration(info.attempts_s) << " summed.\n";
  for (const auto& w : info.warnings) os << "\n" << w << "\n";
  if (info.settings.empty()) return;
  os << "\n";
  Table t(os, {"setting", "value"});
  for (const auto& [k, v] : info.settings) {
    std::string cell = v.empty() ? std::string(kNone) : v;
    for (auto& c : cell)
      if (c == '|' || c == '\n') c = ' ';
    t.row({k, cell});
  }
}

void pass_at_k_section(std::ostringstream& os, const Summary& s) {
  const auto ks = all_ks(s, s.overall.best);
  if (ks.size() == present_ks(s, s.overall.best).size()) return;  // the wide tables have them all
  os << "\n## pass@k\n\nEvery k up to the samples (unbiased estimator).\n\n";
  Table t(os, {"k", "pass@k (best attempt)", "pass@k (final attempt)", "compile@k"});
  for (int k : ks)
    t.row({std::to_string(k), at(s.overall.best.pass_at_k, k), at(s.overall.final_attempt.pass_at_k, k),
           at(s.overall.best.compile_at_k, k)});
}

std::string join_values(const Summary& s, const std::string& dim) {
  auto it = s.cuts.find(dim);
  if (it == s.cuts.end()) return "";
  std::string out;
  for (const auto& sl : it->second) out += (out.empty() ? "" : ", ") + sl.value;
  return out;
}

void scores_row(Table& t, const std::string& label, const Summary& s, const Scores& sc,
                const std::vector<int>& ks) {
  std::vector<std::string> cells{label, std::to_string(sc.tasks), std::to_string(sc.episodes)};
  cells.push_back(at(sc.compile_at_k, 1));
  for (int k : ks) cells.push_back(at(sc.pass_at_k, k));
  for (double p : s.config.fast_ps) cells.push_back(at(sc.fast_p, p));
  cells.push_back(speed(sc.geomean_speedup) + " (" + std::to_string(sc.speedup_tasks) + ")");
  t.row(cells);
}

std::vector<std::string> scores_header(const std::string& first, const Summary& s,
                                       const std::vector<int>& ks) {
  std::vector<std::string> h{first, "tasks", "samples", "compile@1"};
  for (int k : ks) h.push_back("pass@" + std::to_string(k));
  for (double p : s.config.fast_ps) h.push_back("fast_" + threshold_label(p));
  h.push_back("geomean speedup (tasks)");
  return h;
}

void cut_section(std::ostringstream& os, const Summary& s, const std::string& dim,
                 const std::vector<int>& ks) {
  auto it = s.cuts.find(dim);
  if (it == s.cuts.end() || it->second.empty()) return;
  // One backend or one model: the page's first line names it; its table would repeat the headline.
  if ((dim == "backend" || dim == "model") && it->second.size() == 1) return;
  os << "\n## By " << dim << "\n\n";
  os << "Best-attempt scoring; `final pass@1` counts each sample's last turn only.\n\n";
  auto h = scores_header(dim, s, ks);
  h.insert(h.begin() + 4 + static_cast<long>(ks.size()), "final pass@1");
  Table t(os, h);
  for (const auto& sl : it->second) {
    std::vector<std::string> cells{sl.value, std::to_string(sl.best.tasks), std::to_string(sl.best.episodes),
                                   at(sl.best.compile_at_k, 1)};
    for (int k : ks) cells.push_back(at(sl.best.pass_at_k, k));
    cells.push_back(at(sl.final_attempt.pass_at_k, 1));
    for (double p : s.config.fast_ps) cells.push_back(at(sl.best.fast_p, p));
    cells.push_back(speed(sl.best.geomean_speedup) + " (" + std::to_string(sl.best.speedup_tasks) + ")");
    t.row(cells);
  }
}

}  // namespace

/// Which library kernels hold on shapes their prompt never showed (generalisation.json).
static void library_section(std::ostringstream& os, const Summary& s) {
  int yes = 0, no = 0, unknown = 0;
  for (const auto& [task, g] : s.generalisation) (!g.generalises ? unknown : *g.generalises ? yes : no)++;
  os << "\n## Library: generalisation\n\n"
     << "Each library kernel judged again on shapes its prompt never showed (" << unseen_rule_text() << "). "
     << yes << " generalise, " << no << " do not, " << unknown
     << " could not be judged; `kforge library export --as-backend` exports only the first unless "
        "`--include-non-generalising`.\n\n";
  Table t(os, {"task", "backend", "generalises", "outcome on unseen shapes", "unseen shapes", "reason"});
  auto cell = [](std::string v) {
    if (v.size() > 200) v = std::string(utf8_prefix(v, 200)) + "...";
    for (auto& c : v)
      if (c == '\n' || c == '|') c = ' ';
    return v.empty() ? std::string(kNone) : v;
  };
  for (const auto& [task, g] : s.generalisation)
    t.row({task, cell(g.backend), generalises_text(g.generalises),
           cell(g.outcome + (g.sub_kind.empty() ? "" : "/" + g.sub_kind)), cell(g.unseen), cell(g.reason)});
}

namespace {

/// The title line, what the run holds, and its warnings.
void intro_section(std::ostringstream& os, const Summary& s, const std::string& title) {
  const Slice& all = s.overall;
  os << "# " << (title.empty() ? "kforge run report" : title) << "\n\n";
  os << all.stats.attempts << " attempts";
  if (all.stats.llm_errors) os << " (and " << all.stats.llm_errors << " llm_error turns, not scored)";
  if (all.stats.infra_errors)
    os << " (and " << all.stats.infra_errors
       << " attempts that could not be judged: infra_error, not scored)";
  os << ", " << all.best.tasks << " tasks, " << all.best.episodes << " samples (episodes), up to "
     << s.max_turn << " turn" << (s.max_turn == 1 ? "" : "s") << ".";
  if (auto b = join_values(s, "backend"); !b.empty()) os << " Backend: " << b << ".";
  if (auto m = join_values(s, "model"); !m.empty()) os << " Model: " << m << ".";
  os << "\n";
  if (!s.warnings.empty()) {
    os << "\n**Warnings:**\n\n";
    for (const auto& w : s.warnings) os << "- " << w << "\n";
  }
}

/// The tasks that could not be judged, with the reason.
void unusable_section(std::ostringstream& os, const Summary& s) {
  if (!s.unusable.empty()) {
    os << "\n## Unusable tasks\n\n"
       << "These tasks could not be judged (their reference does not load or run, or its output is "
          "random in the suite's module mode); no LLM call was made for them and they are not scored.\n\n";
    Table t(os, {"task", "reason"});
    for (const auto& [task, why] : s.unusable) {
      std::string w = why.size() > 300 ? std::string(utf8_prefix(why, 300)) + "..." : why;
      for (auto& c : w)
        if (c == '\n' || c == '|') c = ' ';
      t.row({task, w});
    }
  }
}

/// The headline scores and what qualifies them: precision, untimed, pass@k, BackendBench, timing noise,
/// anomalies.
void headline_section(std::ostringstream& os, const Summary& s, const std::vector<int>& ks) {
  const Slice& all = s.overall;
  if (s.precision_disallowed > 0) {
    os << "\n**Precision:** " << s.precision_disallowed
       << " passing attempt(s) used lower-precision math than their task allows (TF32/FP16/BF16 "
          "tensor-core instructions on a task of higher dtype; `--allow-precision` opts in): their "
          "speedups are not credited below. Crediting them: geomean speedup "
       << (s.credit_all_precision.speedup_tasks ? fmt("%.2fx", s.credit_all_precision.geomean_speedup)
                                                : kNone);
    for (const auto& [p, v] : s.credit_all_precision.fast_p)
      os << ", fast_" << threshold_label(p) << " " << frac(v);
    os << ".\n";
  }
  os << "\n## Headline\n\n"
     << "pass@k: unbiased estimator over the samples of each task, averaged over tasks. "
        "fast_p: fraction of tasks with a correct kernel of speedup > p (fast_0 = correct). "
        "Best attempt: any turn counts; final attempt: each sample's last turn only.\n\n";
  {
    Table t(os, scores_header("scoring", s, ks));
    scores_row(t, "best attempt", s, all.best, ks);
    scores_row(t, "final attempt", s, all.final_attempt, ks);
  }
  if (all.best.untimed)
    os << "\nNo correct kernel was timed (`--no-bench`): fast_p above 0 and SpeedUp_α@k are unknown (–).\n";
  pass_at_k_section(os, s);
  if (const auto& bb = s.backendbench; bb.operators > 0) {
    os << "\nBackendBench's scores over the " << bb.operators
       << " ATen operator(s) (best attempt; correct = every case passed): correctness score "
       << frac(bb.correctness_score) << " (" << bb.correct << "/" << bb.operators << "), performance score "
       << fmt("%.2fx", bb.performance_score) << " (geomean, 1.0 for an operator without a timed pass)";
    for (const auto& [p, v] : bb.perf_at_p) os << ", perf@" << threshold_label(p) << " " << frac(v);
    os << ". perf@p = fast_p over operators.\n";
  }
  if (s.speedup_ci_rel_halfwidth > 0) {
    os << "\nTiming noise: the median speedup's 95% interval is +-"
       << fmt("%.1f%%", 100 * s.speedup_ci_rel_halfwidth)
       << ". fast_p counting only speedups whose whole interval clears p (best attempt):";
    for (const auto& [p, v] : all.best.fast_p_confident)
      os << " fast_" << threshold_label(p) << " " << frac(v);
    os << ".\n";
  }
  if (s.timing_anomalies > 0)
    os << "\n**Timing anomalies:** " << s.timing_anomalies
       << " pass(es) read faster than the device can write their outputs at its measured peak bandwidth, "
          "or than one kernel launch takes on it; "
          "their speedups are not credited (see `timing_anomaly` in attempts.jsonl).\n";
}

/// Scores counting the attempts up to each turn.
void repair_curve_section(std::ostringstream& os, const Summary& s, const std::vector<int>& ks) {
  const Slice& all = s.overall;
  if (!all.by_turn.empty()) {
    os << "\n## Repair curve\n\n"
       << "Scores counting the attempts at turns <= t (a sample passes at t if any of its "
          "attempts up to t passed).\n\n";
    auto h = scores_header("turn", s, ks);
    Table t(os, h);
    for (std::size_t i = 0; i < all.by_turn.size(); ++i)
      scores_row(t, std::to_string(i + 1), s, all.by_turn[i], ks);
  }
}

/// SpeedUp_α@k per α and k.
void speedup_at_k_section(std::ostringstream& os, const Summary& s, const std::vector<int>& ks) {
  const Slice& all = s.overall;
  if (!s.config.alphas.empty() && !ks.empty()) {
    os << "\n## SpeedUp_α@k\n\n"
       << "Fraction of tasks where one of k samples reaches speedup >= α (unbiased "
          "estimator; best attempt).\n\n";
    std::vector<std::string> h{"α"};
    for (int k : ks) h.push_back("k=" + std::to_string(k));
    Table t(os, h);
    for (double a : s.config.alphas) {
      std::vector<std::string> cells{threshold_label(a)};
      auto it = all.best.speedup_at_k.find(a);
      for (int k : ks) cells.push_back(it == all.best.speedup_at_k.end() ? kNone : at(it->second, k));
      t.row(cells);
    }
  }
}

/// Outcomes and sub-kinds, and TritonBench's per-attempt figures.
void outcomes_section(std::ostringstream& os, const Summary& s) {
  const AttemptStats& st = s.overall.stats;
  os << "\n## Outcomes\n\n";
  {
    Table t(os, {"outcome", "sub-kind", "count", "share"});
    const int records = st.attempts + st.llm_errors + st.infra_errors;
    for (const auto& [o, subs] : st.outcomes) {
      int total = 0;
      for (const auto& [sub, n] : subs) total += n;
      t.row({o, "(all)", std::to_string(total), pct(records ? double(total) / records : 0)});
      if (subs.size() > 1 || !subs.begin()->first.empty())
        for (const auto& [sub, n] : subs)
          t.row(
              {"", sub.empty() ? "(none)" : sub, std::to_string(n), pct(records ? double(n) / records : 0)});
    }
  }
  // TritonBench's two figures, each twice (issue 22 §3): as TritonBench counts (any code) and
  // kforge's pass (Triton-native: no torch_fallback).
  os << "\nPer attempt: compile rate " << frac(st.compile_rate()) << "; call accuracy "
     << frac(st.call_accuracy()) << " correct / " << frac(st.call_accuracy_native())
     << " pass (compiled and ran: any code / without torch_fallback); execution accuracy "
     << frac(st.exec_accuracy_correct()) << " correct / " << frac(st.exec_accuracy())
     << " pass (outputs match: any code / Triton-native); " << st.compile_cached << " of " << st.attempts
     << " compiles served from the cache.\n";
}

/// Tokens, cost and the time of each phase.
void usage_section(std::ostringstream& os, const Summary& s) {
  const AttemptStats& st = s.overall.stats;
  os << "\n## Usage\n\n"
     << "Tokens: " << st.prompt_tokens << " prompt + " << st.completion_tokens
     << " completion = " << (st.prompt_tokens + st.completion_tokens) << ". Cost: $" << usd(st.cost_usd)
     << ".\n\n";
  {
    Table t(os, {"phase", "attempts", "total s", "mean ms"});
    auto row = [&](const char* name, const PhaseTime& p) {
      t.row({name, std::to_string(p.count), fmt("%.1f", p.sum_ms / 1000), ms(p.mean_ms())});
    };
    row("llm", st.llm);
    row("compile", st.compile);
    row("check", st.check);
    row("bench", st.bench);
    row("total", st.total);
  }
}

/// One row per task: its samples, passes and best attempt's figures.
void tasks_section(std::ostringstream& os, const Summary& s) {
  if (!s.tasks.empty()) {
    os << "\n## Tasks\n\n";
    bool multi = s.cuts.count("backend") && s.cuts.at("backend").size() > 1;
    bool multi_model = s.cuts.count("model") && s.cuts.at("model").size() > 1;
    std::vector<std::string> h{"task"};
    if (multi) h.push_back("backend");
    if (multi_model) h.push_back("model");
    for (const char* c :
         {"category", "difficulty", "samples", "compiled", "passed", "final passed", "first pass turn",
          "best speedup", "t_candidate ms", "t_reference ms", "GB/s", "TFLOP/s", "best (sample/turn)"})
      h.push_back(c);
    Table t(os, h);
    for (const auto& tr : s.tasks) {
      std::vector<std::string> cells{tr.task};
      if (multi) cells.push_back(tr.backend);
      if (multi_model) cells.push_back(tr.model);
      cells.push_back(tr.category.empty() ? kNone : tr.category);
      cells.push_back(tr.difficulty ? std::to_string(tr.difficulty) : kNone);
      cells.push_back(std::to_string(tr.samples));
      cells.push_back(std::to_string(tr.compiled_samples));
      cells.push_back(std::to_string(tr.passed_samples));
      cells.push_back(std::to_string(tr.final_passed_samples));
      cells.push_back(tr.first_pass_turn ? std::to_string(tr.first_pass_turn) : kNone);
      cells.push_back(speed(tr.best_speedup()));
      if (tr.best) {
        cells.push_back(ms(tr.best->t_candidate_ms));
        cells.push_back(ms(tr.best->t_reference_ms));
        cells.push_back(tr.best->achieved_gbps > 0 ? fmt("%.1f", tr.best->achieved_gbps) : kNone);
        cells.push_back(tr.best->achieved_tflops > 0 ? fmt("%.2f", tr.best->achieved_tflops) : kNone);
        cells.push_back(std::to_string(tr.best->sample) + "/" + std::to_string(tr.best->turn));
      } else {
        for (int i = 0; i < 5; ++i) cells.push_back(kNone);
      }
      t.row(cells);
    }
  }
}

}  // namespace

std::string render_report_md(const Summary& s, const std::string& title, const RunInfo* info) {
  std::ostringstream os;
  const auto ks = present_ks(s, s.overall.best);
  intro_section(os, s, title);
  if (info) settings_section(os, *info);
  unusable_section(os, s);
  headline_section(os, s, ks);
  repair_curve_section(os, s, ks);
  speedup_at_k_section(os, s, ks);
  for (const auto& dim : cut_dimensions()) cut_section(os, s, dim, ks);
  outcomes_section(os, s);
  usage_section(os, s);
  tasks_section(os, s);
  if (!s.generalisation.empty()) library_section(os, s);
  return os.str();
}

namespace {

/// The compare report's headline table: compile@k, pass@k (best and final attempt), fast_p,
/// the geomean speedup's ratio, attempts, tokens and cost, each with B − A.
void compare_headline(std::ostringstream& os, const Summary& a, const Summary& b, const std::string& name_a,
                      const std::string& name_b) {
  std::set<int> ks_set;
  for (int k : a.config.ks) ks_set.insert(k);
  for (int k : b.config.ks) ks_set.insert(k);
  std::set<double> ps_set(a.config.fast_ps.begin(), a.config.fast_ps.end());
  ps_set.insert(b.config.fast_ps.begin(), b.config.fast_ps.end());

  os << "\n## Headline\n\n";
  {
    Table t(os, {"metric", name_a, name_b, "B − A"});
    const Scores &ab = a.overall.best, &bb = b.overall.best;
    const Scores &af = a.overall.final_attempt, &bf = b.overall.final_attempt;
    for (int k : ks_set)
      if (ab.compile_at_k.count(k) || bb.compile_at_k.count(k))
        t.row({"compile@" + std::to_string(k), at(ab.compile_at_k, k), at(bb.compile_at_k, k),
               signed_delta(ab.compile_at_k, bb.compile_at_k, k)});
    for (int k : ks_set)
      if (ab.pass_at_k.count(k) || bb.pass_at_k.count(k))
        t.row({"pass@" + std::to_string(k) + " (best attempt)", at(ab.pass_at_k, k), at(bb.pass_at_k, k),
               signed_delta(ab.pass_at_k, bb.pass_at_k, k)});
    for (int k : ks_set)
      if (af.pass_at_k.count(k) || bf.pass_at_k.count(k))
        t.row({"pass@" + std::to_string(k) + " (final attempt)", at(af.pass_at_k, k), at(bf.pass_at_k, k),
               signed_delta(af.pass_at_k, bf.pass_at_k, k)});
    for (double p : ps_set) {
      auto ia = ab.fast_p.find(p), ib = bb.fast_p.find(p);
      std::string d = ia != ab.fast_p.end() && ib != bb.fast_p.end() ? fmt("%+.3f", ib->second - ia->second)
                                                                     : std::string(kNone);
      t.row({"fast_" + threshold_label(p), at(ab.fast_p, p), at(bb.fast_p, p), d});
    }
    std::string ratio = ab.geomean_speedup > 0 && bb.geomean_speedup > 0
                            ? fmt("%.2fx", bb.geomean_speedup / ab.geomean_speedup) + " (B/A)"
                            : std::string(kNone);
    t.row({"geomean speedup", speed(ab.geomean_speedup) + " (" + std::to_string(ab.speedup_tasks) + ")",
           speed(bb.geomean_speedup) + " (" + std::to_string(bb.speedup_tasks) + ")", ratio});
    const AttemptStats &sa = a.overall.stats, &sb = b.overall.stats;
    t.row({"attempts", std::to_string(sa.attempts), std::to_string(sb.attempts),
           fmt("%+.0f", double(sb.attempts) - sa.attempts)});
    if (sa.llm_errors || sb.llm_errors)
      t.row({"llm_error turns (not scored)", std::to_string(sa.llm_errors), std::to_string(sb.llm_errors),
             fmt("%+.0f", double(sb.llm_errors) - sa.llm_errors)});
    auto tok = [](const AttemptStats& s) { return s.prompt_tokens + s.completion_tokens; };
    t.row({"tokens", std::to_string(tok(sa)), std::to_string(tok(sb)),
           fmt("%+.0f", double(tok(sb)) - double(tok(sa)))});
    t.row({"cost USD", usd(sa.cost_usd), usd(sb.cost_usd), fmt("%+.4f", sb.cost_usd - sa.cost_usd)});
  }
}

/// pass@1 and fast_1 of both runs by turn; past a run's last turn its final values.
void compare_repair_curve(std::ostringstream& os, const Summary& a, const Summary& b,
                          const std::string& name_a, const std::string& name_b) {
  os << "\n## Repair curve\n\n"
     << "pass@1 and fast_1 counting attempts at turns <= t.\n\n";
  {
    Table t(os, {"turn", name_a + " pass@1", name_b + " pass@1", name_a + " fast_1", name_b + " fast_1"});
    std::size_t T = std::max(a.overall.by_turn.size(), b.overall.by_turn.size());
    auto cell = [](const Slice& sl, std::size_t i, bool pass) -> std::string {
      // Past a run's last turn its scores stay at their final value.
      if (sl.by_turn.empty()) return kNone;
      const Scores& sc = sl.by_turn[std::min(i, sl.by_turn.size() - 1)];
      return pass ? at(sc.pass_at_k, 1) : at(sc.fast_p, 1.0);
    };
    for (std::size_t i = 0; i < T; ++i)
      t.row({std::to_string(i + 1), cell(a.overall, i, true), cell(b.overall, i, true),
             cell(a.overall, i, false), cell(b.overall, i, false)});
  }
}

/// One table per cut dimension where the runs hold more than one value between them.
void compare_cuts(std::ostringstream& os, const Summary& a, const Summary& b, const std::string& name_a,
                  const std::string& name_b) {
  for (const auto& dim : cut_dimensions()) {
    auto ia = a.cuts.find(dim), ib = b.cuts.find(dim);
    std::map<std::string, std::pair<const Slice*, const Slice*>> rows;
    if (ia != a.cuts.end())
      for (const auto& sl : ia->second) rows[sl.value].first = &sl;
    if (ib != b.cuts.end())
      for (const auto& sl : ib->second) rows[sl.value].second = &sl;
    // A dimension where both runs hold one and the same value says nothing new.
    if (rows.size() <= 1) continue;
    os << "\n## By " << dim << "\n\n";
    Table t(os, {dim, name_a + " pass@1", name_b + " pass@1", name_a + " fast_1", name_b + " fast_1",
                 name_a + " speedup", name_b + " speedup"});
    for (const auto& [value, pr] : rows) {
      auto p1 = [](const Slice* sl) { return sl ? at(sl->best.pass_at_k, 1) : std::string(kNone); };
      auto f1 = [](const Slice* sl) { return sl ? at(sl->best.fast_p, 1.0) : std::string(kNone); };
      auto sp = [](const Slice* sl) { return sl ? speed(sl->best.geomean_speedup) : std::string(kNone); };
      t.row({value, p1(pr.first), p1(pr.second), f1(pr.first), f1(pr.second), sp(pr.first), sp(pr.second)});
    }
  }
}

}  // namespace

std::string render_compare(const Summary& a, const Summary& b, const std::string& name_a,
                           const std::string& name_b) {
  std::ostringstream os;
  os << "# Compare: " << name_a << " vs " << name_b << "\n\n";
  os << "A = " << name_a << ": " << a.overall.stats.attempts << " attempts, " << a.overall.best.tasks
     << " tasks, " << a.overall.best.episodes << " samples, up to " << a.max_turn
     << (a.max_turn == 1 ? " turn" : " turns") << ".\n"
     << "B = " << name_b << ": " << b.overall.stats.attempts << " attempts, " << b.overall.best.tasks
     << " tasks, " << b.overall.best.episodes << " samples, up to " << b.max_turn
     << (b.max_turn == 1 ? " turn" : " turns") << ".\n";

  compare_headline(os, a, b, name_a, name_b);
  compare_repair_curve(os, a, b, name_a, name_b);
  compare_cuts(os, a, b, name_a, name_b);
  return os.str();
}

Summary summarize_run(const fs::path& run_dir, const MetricsConfig& config,
                      std::vector<AttemptRecord>* records) {
  LoadedAttempts loaded = load_attempts(run_dir);
  Summary s = summarize(loaded.records, config);
  if (records) *records = std::move(loaded.records);
  s.warnings.insert(s.warnings.begin(), loaded.warnings.begin(), loaded.warnings.end());
  if (auto g = read_generalisation(run_dir)) s.generalisation = std::move(g->kernels);
  if (fs::exists(run_dir / "unusable.json")) {
    try {
      auto j = json::parse(read_file(run_dir / "unusable.json"));
      for (const auto& [task, why] : j.items())
        if (why.is_string()) s.unusable[task] = why.get<std::string>();
    } catch (const std::exception& e) {
      s.warnings.push_back("unusable.json: " + std::string(e.what()));
    }
  }
  return s;
}

std::optional<double> parse_iso8601_utc(const std::string& text) {
  int y, mo, d, h, mi;
  double sec;
  char z = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &y, &mo, &d, &h, &mi, &sec, &z) != 7 || z != 'Z')
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || !(sec >= 0 && sec < 61))
    return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  return double(timegm(&tm)) + sec;
}

namespace {

std::string setting_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : ",") + setting_text(e);
    return out;
  }
  return v.dump();
}

}  // namespace

RunInfo read_run_info(const fs::path& run_dir, const std::vector<AttemptRecord>& records) {
  RunInfo info;
  info.name = fs::absolute(run_dir).lexically_normal().filename().string();
  if (info.name.empty())
    info.name = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  if (fs::exists(run_dir / "manifest.json")) {
    try {
      json m = json::parse(read_file(run_dir / "manifest.json"));
      info.command = m.value("command", "");
      if (m.contains("config") && m["config"].is_object())
        for (const auto& [k, v] : m["config"].items()) info.settings.emplace_back(k, setting_text(v));
      if (m.contains("runner") && m["runner"].is_object())
        for (const char* k : {"device_name", "gpu", "cpu"})
          if (m["runner"].contains(k) && m["runner"][k].is_string()) {
            info.settings.emplace_back("device name", m["runner"][k].get<std::string>());
            break;
          }
      if (m.contains("resumes") && m["resumes"].is_array())
        info.resumes = static_cast<int>(m["resumes"].size());
      if (m.contains("complete") && m["complete"].is_boolean()) info.complete = m["complete"].get<bool>();
      if (m.contains("wall_s") && m["wall_s"].is_number() && m["wall_s"].get<double>() > 0) {
        info.wall_s = m["wall_s"].get<double>();
        info.wall_from_manifest = true;
      }
    } catch (const std::exception& e) {
      info.warnings.push_back("manifest.json: " + std::string(e.what()));
    }
  }
  std::optional<double> t0, t1;
  for (const auto& r : records) {
    if (r.total_ms > 0 && std::isfinite(r.total_ms)) info.attempts_s += r.total_ms / 1000;
    auto a = parse_iso8601_utc(r.started_at), b = parse_iso8601_utc(r.finished_at);
    if (a && (!t0 || *a < *t0)) {
      t0 = a;
      info.started_at = r.started_at;
    }
    if (b && (!t1 || *b > *t1)) {
      t1 = b;
      info.finished_at = r.finished_at;
    }
  }
  if (t0 && t1 && *t1 >= *t0 && !info.wall_from_manifest) info.wall_s = *t1 - *t0;
  return info;
}

const std::vector<std::string>& compare_conditions() {
  static const std::vector<std::string> k{"suite",    "profile",     "trials",          "reps",
                                          "bench",    "perf_inputs", "allow_precision", "allow_ops",
                                          "baseline", "device name"};
  return k;
}

namespace {
/// A setting of RunInfo, "default" for a profile given as "".
std::optional<std::string> setting(const RunInfo& info, const std::string& key) {
  for (const auto& [k, v] : info.settings)
    if (k == key) return key == "profile" && v.empty() ? "default" : v;
  return std::nullopt;
}

std::vector<std::string> not_alike(const ComparedRuns& c) {
  std::vector<std::string> out;
  for (const auto& key : compare_conditions()) {
    const auto a = setting(c.info_a, key), b = setting(c.info_b, key);
    if (!a || !b || *a == *b) continue;  // a run recorded before the option: not known to differ
    out.push_back(key + " differs: " + (a->empty() ? "(none)" : *a) + " in " + c.name_a + ", " +
                  (b->empty() ? "(none)" : *b) + " in " + c.name_b +
                  " (a judging condition: the scores are not measured alike)");
  }
  for (const auto* side : {&c.info_a, &c.info_b})
    if (side->complete == false)
      out.push_back((side == &c.info_a ? c.name_a : c.name_b) +
                    " has not finished (INCOMPLETE): its scores cover only the attempts made so far");
  return out;
}
}  // namespace

ComparedRuns compare_runs(const fs::path& a, const fs::path& b) {
  ComparedRuns c;
  c.dir_a = a;
  c.dir_b = b;
  auto la = load_attempts(a), lb = load_attempts(b);
  c.info_a = read_run_info(a, la.records);
  c.info_b = read_run_info(b, lb.records);
  c.name_a = c.info_a.name;
  c.name_b = c.info_b.name;
  if (c.name_a == c.name_b) {
    c.name_a = "A:" + c.name_a;
    c.name_b = "B:" + c.name_b;
  }
  c.not_alike = not_alike(c);
  std::set<std::string> ta, tb;
  for (const auto& r : la.records) ta.insert(r.task);
  for (const auto& r : lb.records) tb.insert(r.task);
  for (const auto& t : ta) {
    if (tb.count(t))
      ++c.common;
    else
      c.only_a.push_back(t);
  }
  for (const auto& t : tb)
    if (!ta.count(t)) c.only_b.push_back(t);
  for (auto& r : la.records)
    if (tb.count(r.task)) c.records_a.push_back(std::move(r));
  for (auto& r : lb.records)
    if (ta.count(r.task)) c.records_b.push_back(std::move(r));
  c.a = summarize(c.records_a);
  c.b = summarize(c.records_b);
  c.a.warnings.insert(c.a.warnings.begin(), la.warnings.begin(), la.warnings.end());
  c.b.warnings.insert(c.b.warnings.begin(), lb.warnings.begin(), lb.warnings.end());
  return c;
}

namespace {

std::string task_list(const std::vector<std::string>& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < 8; ++i) out += (i ? ", " : "") + ids[i];
  if (ids.size() > 8) out += ", ... (" + std::to_string(ids.size() - 8) + " more)";
  return out;
}

}  // namespace

std::vector<std::string> compare_drop_notes(const ComparedRuns& c) {
  std::vector<std::string> out;
  if (c.common == 0) {
    out.push_back("The runs have no task in common (" + c.name_a + ": " + std::to_string(c.only_a.size()) +
                  " tasks, " + c.name_b + ": " + std::to_string(c.only_b.size()) + "): nothing to compare.");
    return out;
  }
  if (!c.only_a.empty())
    out.push_back("Dropped " + std::to_string(c.only_a.size()) + " task(s) only " + c.name_a +
                  " attempted: " + task_list(c.only_a) + ".");
  if (!c.only_b.empty())
    out.push_back("Dropped " + std::to_string(c.only_b.size()) + " task(s) only " + c.name_b +
                  " attempted: " + task_list(c.only_b) + ".");
  return out;
}

std::vector<TaskDiff> task_diffs(const ComparedRuns& c) {
  std::map<std::string, TaskDiff> m;
  auto take = [&](const Summary& s, bool is_a) {
    for (const auto& t : s.tasks) {
      TaskDiff& d = m[t.task];
      d.task = t.task;
      if (d.category.empty()) d.category = t.category;
      TaskDiff::Side& side = is_a ? d.a : d.b;
      side.present = true;
      side.samples += t.samples;
      side.passed_samples += t.passed_samples;
      side.best_speedup = std::max(side.best_speedup, t.best_speedup());
      if (t.first_pass_turn && (!side.first_pass_turn || t.first_pass_turn < side.first_pass_turn))
        side.first_pass_turn = t.first_pass_turn;
    }
  };
  take(c.a, true);
  take(c.b, false);
  std::vector<TaskDiff> out;
  for (auto& [id, d] : m) {
    const bool pa = d.a.passed_samples > 0, pb = d.b.passed_samples > 0;
    d.change = pa && pb ? "both" : pa ? "lost" : pb ? "gained" : "neither";
    out.push_back(std::move(d));
  }
  return out;
}

std::string render_compare_md(const ComparedRuns& c) {
  std::ostringstream os;
  auto notes = compare_drop_notes(c);
  std::string body = render_compare(c.a, c.b, c.name_a, c.name_b);
  // The notes go right after the title line.
  auto nl = body.find("\n\n");
  os << body.substr(0, nl + 2);
  if (!c.not_alike.empty()) {
    os << "**Warning: the runs are not measured alike.**\n\n";
    for (const auto& n : c.not_alike) os << "- " << n << "\n";
    os << "\n";
  }
  os << "Compared: the " << c.common << " task(s) both runs attempted.";
  if (!notes.empty()) {
    os << "\n\n**Warning: the task sets differ.**\n\n";
    for (const auto& n : notes) os << "- " << n << "\n";
  } else {
    os << "\n";
  }
  os << "\n" << body.substr(nl + 2);

  auto diffs = task_diffs(c);
  int changed = 0;
  for (const auto& d : diffs) changed += d.change == "gained" || d.change == "lost";
  os << "\n## Per task\n\n"
     << "Tasks where one run passed and the other did not (" << changed << " of " << diffs.size()
     << "); passed = samples with a passing attempt / samples.\n\n";
  if (changed) {
    Table t(os, {"task", "change", c.name_a + " passed", c.name_b + " passed", c.name_a + " best",
                 c.name_b + " best"});
    for (const auto& d : diffs) {
      if (d.change != "gained" && d.change != "lost") continue;
      t.row({d.task, d.change, std::to_string(d.a.passed_samples) + "/" + std::to_string(d.a.samples),
             std::to_string(d.b.passed_samples) + "/" + std::to_string(d.b.samples), speed(d.a.best_speedup),
             speed(d.b.best_speedup)});
    }
  }

  os << "\n## Equal budget\n\n"
     << "k samples of each task run to turn t cost on average `calls` LLM calls and `tokens` tokens per "
        "task and reach pass@k at t (best attempt): compare the runs at equal calls or tokens.\n\n";
  Table t(os, {"run", "k", "turn", "calls/task", "tokens/task", "pass@k"});
  for (const auto* side : {&c.a, &c.b})
    for (const auto& p : side->budget)
      t.row({side == &c.a ? c.name_a : c.name_b, std::to_string(p.samples), std::to_string(p.turn),
             fmt("%.2f", p.calls), fmt("%.0f", p.tokens), frac(p.pass)});
  return os.str();
}

std::map<std::string, LibraryKernel> library_kernels(const fs::path& run_dir, const Summary& s,
                                                     std::vector<std::string>* missing) {
  // One entry per task id: the best over backends and models.
  std::map<std::string, const TaskResult*> best;
  for (const auto& t : s.tasks) {
    if (!t.best) continue;
    auto [it, fresh] = best.try_emplace(t.task, &t);
    if (!fresh) {
      const AttemptRecord &x = *t.best, &y = *it->second->best;
      bool sx = x.has_speedup(), sy = y.has_speedup();
      if ((sx && !sy) || (sx && sy && x.speedup > y.speedup)) it->second = &t;
    }
  }
  std::map<std::string, LibraryKernel> out;
  std::error_code ec;
  for (const auto& [task, tr] : best) {
    const AttemptRecord& r = *tr->best;
    // The canonical layout, not the record's attempt_dir: a record never points outside the run.
    const fs::path adir = run_dir / attempt_rel_path(r.task, r.sample, r.turn);
    // The judged source (its hash is the record's); `kforge eval` keeps only the built one
    // (build/kernel.*).
    CandidateFile src = candidate_file(adir, r.source_sha);
    if (src.path.empty()) src = candidate_file(adir / "build", r.source_sha);
    if (src.path.empty()) {
      if (missing) missing->push_back(task + ": no kernel.cu, kernel.cpp or kernel.py in " + adir.string());
      continue;
    }
    std::string text = src.text ? std::move(*src.text) : read_file(src.path);  // unreadable: its error
    auto at = text.find(operator_adapter_marker());
    if (at == std::string::npos) at = text.find(native_adapter_marker());
    if (at != std::string::npos) {  // kforge's adapter, not the candidate's code
      text = text.substr(0, at);
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      text += "\n";
    }
    out.emplace(task, LibraryKernel{tr, adir, src.path.filename().string(), std::move(text)});
  }
  return out;
}

LibraryExport export_library(const fs::path& run_dir) {
  Summary s = summarize_run(run_dir);
  LibraryExport ex;
  ex.dir = run_dir / "library";
  const auto kernels = library_kernels(run_dir, s, &ex.missing);
  std::error_code ec;
  fs::remove_all(ex.dir, ec);
  if (ec) throw std::runtime_error(ex.dir.string() + ": cannot clear: " + ec.message());
  fs::create_directories(ex.dir);
  json index = json::array();
  for (const auto& [task, k] : kernels) {
    const AttemptRecord& r = *k.result->best;
    // Through beneath.hpp: the task id's folders never lead out of library/.
    const fs::path out = fs::path(task);
    write_file_beneath(ex.dir, out / k.file_name, k.source);
    if (fs::is_regular_file(k.attempt_dir / "result.json", ec))
      write_file_beneath(ex.dir, out / "result.json", read_file(k.attempt_dir / "result.json"));
    write_file_beneath(ex.dir, out / "attempt.json", dump_json(to_json(r), 2) + "\n");
    const auto g = generalisation_of(s.generalisation, task, r.source_sha);
    index.push_back(
        {{"task", task},
         {"category", r.category},
         {"difficulty", r.difficulty},
         {"backend", r.backend},
         {"model", r.model},
         {"file", (fs::path(task) / k.file_name).generic_string()},
         {"speedup", r.has_speedup() ? r.speedup : 0.0},
         {"source_sha", r.source_sha},
         {"attempt_dir", r.attempt_dir},
         {"generalises", g && g->generalises ? json(*g->generalises) : json(nullptr)},
         {"generalisation",
          g ? g->reason
            : std::string("not checked: `kforge library export RUN` judges it on unseen shapes")}});
    ++ex.exported;
  }
  write_file(ex.dir / "index.json", dump_json(index, 2) + "\n");
  return ex;
}

}  // namespace kforge
