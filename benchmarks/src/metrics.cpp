#include "kforge/benchmarks/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <tuple>

namespace kforge {

using nlohmann::json;

double pass_at_k(int n, int c, int k) {
  if (n < 1 || k < 1 || c < 0)
    throw std::invalid_argument("pass_at_k: need n >= 1, k >= 1, c >= 0 (n=" + std::to_string(n) +
                                ", c=" + std::to_string(c) + ", k=" + std::to_string(k) + ")");
  if (k > n) throw std::invalid_argument("pass_at_k: k=" + std::to_string(k) + " > n=" + std::to_string(n));
  if (c > n) throw std::invalid_argument("pass_at_k: c=" + std::to_string(c) + " > n=" + std::to_string(n));
  if (n - c < k) return 1.0;
  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
  double prod = 1.0;
  for (int i = n - c + 1; i <= n; ++i) prod *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - prod;
}

std::string threshold_label(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", p);
  return buf;
}

const std::vector<std::string>& cut_dimensions() {
  static const std::vector<std::string> d{"category", "difficulty", "backend", "model"};
  return d;
}

std::string cut_label(const AttemptRecord& r, const std::string& dimension) {
  if (dimension == "category") return r.category.empty() ? "(none)" : r.category;
  if (dimension == "difficulty")
    return r.difficulty > 0 ? std::to_string(r.difficulty) : std::string("unknown");
  if (dimension == "backend") return r.backend.empty() ? "(none)" : r.backend;
  if (dimension == "model") return r.model.empty() ? "(none)" : r.model;
  throw std::invalid_argument("unknown cut dimension '" + dimension + "'");
}

namespace {

using ProblemKey = std::tuple<std::string, std::string, std::string>;  // backend, model, task

ProblemKey problem_of(const AttemptRecord& r) {
  return {r.backend, r.model, r.task};
}

/// One episode: its attempts sorted by turn.
struct Episode {
  int sample = 0;
  std::vector<const AttemptRecord*> turns;
};

struct Problem {
  ProblemKey key;
  std::vector<Episode> episodes;  // sorted by sample
};

/// What counts of an episode under one rule.
struct EpisodeView {
  bool compiled = false;
  bool passed = false;
  double speedup = 0;      // best measured speedup of a passing attempt; 0 = none
  double speedup_low = 0;  // best low end of a credited speedup's 95% interval; 0 = none
  bool timed = false;      // a passing attempt was benchmarked (its speedup measured, credited or not)
};

/// A pass whose time was measured (a --no-bench pass has neither time nor speedup).
bool timed_pass(const AttemptRecord& r) {
  return r.passed() && (r.speedup > 0 || r.t_candidate_ms > 0);
}

EpisodeView view_upto(const Episode& e, int turn) {
  EpisodeView v;
  for (const AttemptRecord* r : e.turns) {
    if (r->turn > turn) break;
    v.compiled |= r->compiled();
    v.passed |= r->passed();
    v.timed |= timed_pass(*r);
    if (r->has_speedup()) {
      v.speedup = std::max(v.speedup, r->speedup);
      v.speedup_low = std::max(v.speedup_low, r->speedup_ci_low);
    }
  }
  return v;
}

EpisodeView view_final(const Episode& e) {
  EpisodeView v;
  if (e.turns.empty()) return v;
  const AttemptRecord* r = e.turns.back();
  v.compiled = r->compiled();
  v.passed = r->passed();
  v.timed = timed_pass(*r);
  if (r->has_speedup()) {
    v.speedup = r->speedup;
    v.speedup_low = r->speedup_ci_low;
  }
  return v;
}

Scores score(const std::vector<std::vector<EpisodeView>>& problems, const MetricsConfig& cfg) {
  Scores s;
  s.tasks = static_cast<int>(problems.size());
  std::map<int, double> compile_sum, pass_sum;
  std::map<int, int> k_count;
  std::map<double, std::map<int, double>> alpha_sum;
  std::map<double, int> fast_count, confident_count;
  for (double p : cfg.fast_ps) fast_count[p] = confident_count[p] = 0;
  double log_sum = 0;
  bool any_timed = false;
  for (const auto& eps : problems) {
    int n = static_cast<int>(eps.size());
    if (n == 0) continue;
    s.episodes += n;
    int c_compile = 0, c_pass = 0;
    double best = 0, best_low = 0;
    std::map<double, int> c_alpha;
    for (const auto& v : eps) {
      c_compile += v.compiled;
      c_pass += v.passed;
      best = std::max(best, v.speedup);
      best_low = std::max(best_low, v.speedup_low);
      any_timed |= v.timed;
      for (double a : cfg.alphas)
        if (v.passed && v.speedup > 0 && v.speedup >= a) ++c_alpha[a];
    }
    for (int k : cfg.ks) {
      if (k > n) continue;
      ++k_count[k];
      compile_sum[k] += pass_at_k(n, c_compile, k);
      pass_sum[k] += pass_at_k(n, c_pass, k);
      for (double a : cfg.alphas) alpha_sum[a][k] += pass_at_k(n, c_alpha[a], k);
    }
    if (c_pass > 0) {
      ++s.correct_tasks;
      for (double p : cfg.fast_ps) {
        if (p <= 0 ? true : best > p) ++fast_count[p];
        if (p <= 0 ? true : best_low > p) ++confident_count[p];
      }
    }
    if (best > 0) {
      ++s.speedup_tasks;
      log_sum += std::log(best);
    }
  }
  for (const auto& [k, cnt] : k_count) {
    s.compile_at_k[k] = compile_sum[k] / cnt;
    s.pass_at_k[k] = pass_sum[k] / cnt;
    for (double a : cfg.alphas) s.speedup_at_k[a][k] = alpha_sum[a][k] / cnt;
  }
  for (const auto& [p, cnt] : fast_count) s.fast_p[p] = s.tasks ? static_cast<double>(cnt) / s.tasks : 0;
  for (const auto& [p, cnt] : confident_count)
    s.fast_p_confident[p] = s.tasks ? static_cast<double>(cnt) / s.tasks : 0;
  if (s.speedup_tasks) s.geomean_speedup = std::exp(log_sum / s.speedup_tasks);
  if (s.correct_tasks > 0 && !any_timed) {
    // Correct kernels, none timed: how fast they are is unknown, not zero.
    s.untimed = true;
    for (auto* m : {&s.fast_p, &s.fast_p_confident})
      for (auto it = m->begin(); it != m->end();) it = it->first > 0 ? m->erase(it) : std::next(it);
    s.speedup_at_k.clear();
  }
  return s;
}

void add_phase(PhaseTime& p, double ms) {
  if (std::isfinite(ms) && ms > 0) {
    p.sum_ms += ms;
    ++p.count;
  }
}

AttemptStats attempt_stats(const std::vector<const AttemptRecord*>& rs) {
  AttemptStats st;
  for (const AttemptRecord* r : rs) {
    ++st.outcomes[std::string(to_string(r->outcome))][r->sub_kind];
    st.prompt_tokens += r->prompt_tokens;
    st.completion_tokens += r->completion_tokens;
    if (std::isfinite(r->cost_usd)) st.cost_usd += r->cost_usd;
    add_phase(st.llm, r->llm_ms);
    add_phase(st.total, r->total_ms);
    if (!is_model_outcome(r->outcome)) {
      ++(r->outcome == Outcome::infra_error ? st.infra_errors : st.llm_errors);
      continue;
    }
    ++st.attempts;
    st.compiled += r->compiled();
    st.ran_native += r->outcome == Outcome::output_mismatch || r->outcome == Outcome::pass;
    st.ran += r->outcome == Outcome::output_mismatch || r->outcome == Outcome::torch_fallback ||
              r->outcome == Outcome::pass;
    st.correct += r->passed() || (r->outcome == Outcome::torch_fallback && r->correct);
    st.passed += r->passed();
    st.compile_cached += r->compile_cached;
    add_phase(st.compile, r->compile_ms);
    add_phase(st.check, r->check_ms);
    add_phase(st.bench, r->bench_ms);
  }
  return st;
}

/// Groups (deduplicated) records into problems and episodes; llm_error records are left out
/// (an episode of only llm_errors, and a problem of only such episodes, does not exist).
std::vector<Problem> group(const std::vector<const AttemptRecord*>& rs) {
  std::map<ProblemKey, std::map<int, std::map<int, const AttemptRecord*>>> m;
  for (const AttemptRecord* r : rs)
    if (is_model_outcome(r->outcome)) m[problem_of(*r)][r->sample][r->turn] = r;
  std::vector<Problem> out;
  for (auto& [key, samples] : m) {
    Problem p;
    p.key = key;
    for (auto& [sample, turns] : samples) {
      Episode e;
      e.sample = sample;
      for (auto& [t, r] : turns) e.turns.push_back(r);
      p.episodes.push_back(std::move(e));
    }
    out.push_back(std::move(p));
  }
  return out;
}

Slice make_slice(const std::string& value, const std::vector<const AttemptRecord*>& rs,
                 const MetricsConfig& cfg) {
  Slice sl;
  sl.value = value;
  sl.stats = attempt_stats(rs);
  for (const AttemptRecord* r : rs)
    if (is_model_outcome(r->outcome)) sl.max_turn = std::max(sl.max_turn, r->turn);
  auto problems = group(rs);
  auto views = [&](auto&& fn) {
    std::vector<std::vector<EpisodeView>> out;
    for (const auto& p : problems) {
      std::vector<EpisodeView> eps;
      for (const auto& e : p.episodes) eps.push_back(fn(e));
      out.push_back(std::move(eps));
    }
    return out;
  };
  sl.best = score(views([&](const Episode& e) { return view_upto(e, sl.max_turn); }), cfg);
  sl.final_attempt = score(views([](const Episode& e) { return view_final(e); }), cfg);
  for (int t = 1; t <= sl.max_turn; ++t)
    sl.by_turn.push_back(score(views([t](const Episode& e) { return view_upto(e, t); }), cfg));
  return sl;
}

/// a is a better "best attempt" than b.
bool better(const AttemptRecord& a, const AttemptRecord& b) {
  bool sa = a.has_speedup(), sb = b.has_speedup();
  if (sa != sb) return sa;
  if (sa && a.speedup != b.speedup) return a.speedup > b.speedup;
  if (a.turn != b.turn) return a.turn < b.turn;
  return a.sample < b.sample;
}

TaskResult task_result(const Problem& p) {
  TaskResult t;
  std::tie(t.backend, t.model, t.task) = p.key;
  t.samples = static_cast<int>(p.episodes.size());
  for (const auto& e : p.episodes) {
    bool compiled = false, passed = false;
    for (const AttemptRecord* r : e.turns) {
      if (t.category.empty()) t.category = r->category;
      if (t.difficulty == 0) t.difficulty = r->difficulty;
      t.max_turn = std::max(t.max_turn, r->turn);
      compiled |= r->compiled();
      if (r->passed()) {
        passed = true;
        if (t.first_pass_turn == 0 || r->turn < t.first_pass_turn) t.first_pass_turn = r->turn;
        if (!t.best || better(*r, *t.best)) t.best = *r;
      }
    }
    t.compiled_samples += compiled;
    t.passed_samples += passed;
    if (!e.turns.empty() && e.turns.back()->passed()) ++t.final_passed_samples;
  }
  return t;
}

json k_map(const std::map<int, double>& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[std::to_string(k)] = v;
  return j;
}

json phase_json(const PhaseTime& p) {
  return {{"sum_ms", p.sum_ms}, {"count", p.count}, {"mean_ms", p.mean_ms()}};
}

json stats_json(const AttemptStats& s) {
  json outcomes = json::object();
  for (const auto& [o, subs] : s.outcomes) {
    int total = 0;
    json sj = json::object();
    for (const auto& [sub, n] : subs) {
      total += n;
      sj[sub.empty() ? "-" : sub] = n;
    }
    outcomes[o] = {{"count", total}, {"sub_kinds", sj}};
  }
  return {{"attempts", s.attempts},
          {"llm_errors", s.llm_errors},
          {"infra_errors", s.infra_errors},
          {"compiled", s.compiled},
          {"ran", s.ran},
          {"ran_native", s.ran_native},
          {"correct", s.correct},
          {"passed", s.passed},
          {"compile_cached", s.compile_cached},
          {"compile_rate", s.compile_rate()},
          {"call_accuracy", s.call_accuracy()},
          {"call_accuracy_native", s.call_accuracy_native()},
          {"exec_accuracy_correct", s.exec_accuracy_correct()},
          {"exec_accuracy", s.exec_accuracy()},
          {"outcomes", outcomes},
          {"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"cost_usd", s.cost_usd},
          {"phases",
           {{"llm", phase_json(s.llm)},
            {"compile", phase_json(s.compile)},
            {"check", phase_json(s.check)},
            {"bench", phase_json(s.bench)},
            {"total", phase_json(s.total)}}}};
}

/// The equal-budget points (BudgetPoint) of a run: `all` every record (calls and tokens spent),
/// `overall` its scores.
std::vector<BudgetPoint> budget_points(const std::vector<AttemptRecord>& all, const Slice& overall,
                                       const std::vector<int>& ks) {
  // Calls and tokens per (problem, sample) at each turn, then the mean over episodes of the
  // cumulative sums.
  std::map<std::tuple<std::string, std::string, std::string, int>, std::vector<std::pair<double, double>>> ep;
  const int T = overall.max_turn;
  if (T < 1) return {};
  for (const auto& r : all) {
    if (r.turn < 1 || r.turn > T) continue;
    auto& v = ep[{r.backend, r.model, r.task, r.sample}];
    v.resize(static_cast<std::size_t>(T));
    v[static_cast<std::size_t>(r.turn - 1)].first += 1;
    v[static_cast<std::size_t>(r.turn - 1)].second += double(r.prompt_tokens + r.completion_tokens);
  }
  if (ep.empty()) return {};
  std::vector<double> calls(static_cast<std::size_t>(T)), tokens(static_cast<std::size_t>(T));
  for (const auto& [key, v] : ep) {
    double c = 0, tk = 0;
    for (std::size_t t = 0; t < v.size(); ++t) {
      c += v[t].first;
      tk += v[t].second;
      calls[t] += c / double(ep.size());
      tokens[t] += tk / double(ep.size());
    }
  }
  std::vector<BudgetPoint> out;
  for (int k : ks)
    for (int t = 1; t <= T && t <= static_cast<int>(overall.by_turn.size()); ++t) {
      const auto& pk = overall.by_turn[static_cast<std::size_t>(t - 1)].pass_at_k;
      auto it = pk.find(k);
      if (it == pk.end()) continue;
      out.push_back({k, t, k * calls[static_cast<std::size_t>(t - 1)],
                     k * tokens[static_cast<std::size_t>(t - 1)], it->second});
    }
  return out;
}

/// Every k up to the most samples any problem has (model outcomes only).
std::vector<int> every_k(const std::vector<AttemptRecord>& records) {
  std::map<ProblemKey, std::set<int>> samples;
  for (const auto& r : records)
    if (is_model_outcome(r.outcome)) samples[problem_of(r)].insert(r.sample);
  std::size_t n = 0;
  for (const auto& [key, ss] : samples) n = std::max(n, ss.size());
  std::vector<int> ks;
  for (int k = 1; k <= static_cast<int>(n); ++k) ks.push_back(k);
  return ks;
}

/// The last record of each (backend, model, task, sample, turn), in key order. A later record
/// replaces an llm_error / infra_error turn silently (asked again by --resume); a later one of a
/// model outcome also wins, with a warning.
std::vector<const AttemptRecord*> latest_records(const std::vector<AttemptRecord>& records,
                                                 std::vector<std::string>& warnings) {
  std::map<std::tuple<std::string, std::string, std::string, int, int>, std::size_t> last;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    auto [it, fresh] = last.try_emplace({r.backend, r.model, r.task, r.sample, r.turn}, i);
    if (!fresh && is_model_outcome(records[it->second].outcome))
      warnings.push_back("duplicate record for task '" + r.task + "' sample " + std::to_string(r.sample) +
                         " turn " + std::to_string(r.turn) +
                         (r.backend.empty() ? std::string() : " backend " + r.backend) +
                         ": the later one counts");
    it->second = i;
  }
  std::vector<const AttemptRecord*> rs;
  rs.reserve(last.size());
  for (const auto& [key, i] : last) rs.push_back(&records[i]);
  return rs;
}

/// The best-attempt figures were every pass credited whatever precision it used; counts the
/// passes that used a disallowed one into `*disallowed`.
Scores best_with_all_precision(const std::vector<const AttemptRecord*>& rs, const MetricsConfig& cfg,
                               int* disallowed) {
  std::vector<AttemptRecord> credited;
  for (const AttemptRecord* r : rs) {
    credited.push_back(*r);
    if (r->precision_disallowed && r->passed()) ++*disallowed;
    credited.back().precision_disallowed = false;
  }
  std::vector<const AttemptRecord*> cp;
  for (const auto& r : credited) cp.push_back(&r);
  return make_slice("all", cp, cfg).best;
}

/// The median relative half-width of the speedups' confidence intervals (0 when none has one).
double median_ci_halfwidth(const std::vector<const AttemptRecord*>& rs) {
  std::vector<double> halfwidths;
  for (const AttemptRecord* r : rs)
    if (r->has_speedup() && r->speedup_ci_high > r->speedup_ci_low && r->speedup_ci_low > 0)
      halfwidths.push_back((r->speedup_ci_high - r->speedup_ci_low) / 2 / r->speedup);
  if (halfwidths.empty()) return 0;
  std::nth_element(halfwidths.begin(), halfwidths.begin() + static_cast<long>(halfwidths.size() / 2),
                   halfwidths.end());
  return halfwidths[halfwidths.size() / 2];
}

/// One slice per value of cut dimension `dim`; difficulty sorts numerically ("unknown" last),
/// the others by name.
std::vector<Slice> cut_slices(const std::vector<const AttemptRecord*>& rs, const std::string& dim,
                              const MetricsConfig& cfg) {
  std::map<std::string, std::vector<const AttemptRecord*>> parts;
  for (const AttemptRecord* r : rs) parts[cut_label(*r, dim)].push_back(r);
  std::vector<Slice> slices;
  for (const auto& [value, part] : parts) slices.push_back(make_slice(value, part, cfg));
  if (dim == "difficulty")
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      auto num = [](const std::string& v) { return v == "unknown" ? 1000 : std::stoi(v); };
      return num(a.value) < num(b.value);
    });
  return slices;
}

}  // namespace

Summary summarize(const std::vector<AttemptRecord>& records, const MetricsConfig& config) {
  for (int k : config.ks)
    if (k < 1) throw std::invalid_argument("metrics config: k=" + std::to_string(k) + " < 1");
  Summary s;
  s.config = config;
  s.attempts = records.size();
  if (s.config.ks.empty()) s.config.ks = every_k(records);
  const MetricsConfig& cfg = s.config;

  const std::vector<const AttemptRecord*> rs = latest_records(records, s.warnings);

  s.overall = make_slice("all", rs, cfg);
  s.credit_all_precision = best_with_all_precision(rs, cfg, &s.precision_disallowed);
  for (const AttemptRecord* r : rs)
    if (r->passed() && !r->timing_anomaly.empty()) ++s.timing_anomalies;
  s.speedup_ci_rel_halfwidth = median_ci_halfwidth(rs);
  if (s.timing_anomalies > 0)
    s.warnings.push_back(std::to_string(s.timing_anomalies) +
                         " pass(es) timed faster than the device can write their outputs or run one kernel "
                         "launch (timing_anomaly): "
                         "their speedups are recorded but not credited");
  s.llm_errors = s.overall.stats.llm_errors;
  if (s.llm_errors > 0)
    s.warnings.push_back(std::to_string(s.llm_errors) +
                         " turn(s) ended in llm_error (the endpoint failed; not scored): `kforge run "
                         "--resume RUN_DIR` asks them again");
  s.infra_errors = s.overall.stats.infra_errors;
  if (s.infra_errors > 0)
    s.warnings.push_back(
        std::to_string(s.infra_errors) +
        " attempt(s) could not be judged (infra_error: kforge's toolchain, runner or reference "
        "failed; not scored): `kforge run --resume RUN_DIR` asks them again");
  s.max_turn = s.overall.max_turn;
  s.budget = budget_points(records, s.overall, cfg.ks);
  for (const auto& dim : cut_dimensions()) s.cuts[dim] = cut_slices(rs, dim, cfg);
  for (const auto& p : group(rs)) s.tasks.push_back(task_result(p));
  std::sort(s.tasks.begin(), s.tasks.end(), [](const TaskResult& a, const TaskResult& b) {
    return std::tie(a.task, a.backend, a.model) < std::tie(b.task, b.backend, b.model);
  });
  s.backendbench = backendbench_scores(s.tasks, cfg.fast_ps);
  return s;
}

BackendBenchScores backendbench_scores(const std::vector<TaskResult>& tasks, const std::vector<double>& ps) {
  BackendBenchScores b;
  double log_sum = 0;
  std::map<double, int> above;
  for (const auto& t : tasks) {
    if (t.category != "operator") continue;
    ++b.operators;
    const bool correct = t.best.has_value();
    b.correct += correct;
    const double sp = t.best_speedup();
    log_sum += sp > 0 ? std::log(sp) : 0.0;  // no timed pass: BackendBench's 1.0
    for (double p : ps) above[p] += correct && sp > p;
  }
  if (b.operators == 0) return b;
  b.correctness_score = static_cast<double>(b.correct) / b.operators;
  b.performance_score = std::exp(log_sum / b.operators);
  for (double p : ps) b.perf_at_p[p] = static_cast<double>(above[p]) / b.operators;
  return b;
}

json to_json(const Scores& s) {
  json fast = json::object();
  for (const auto& [p, v] : s.fast_p) fast[threshold_label(p)] = v;
  json confident = json::object();
  for (const auto& [p, v] : s.fast_p_confident) confident[threshold_label(p)] = v;
  json sp = json::object();
  for (const auto& [a, m] : s.speedup_at_k) sp[threshold_label(a)] = k_map(m);
  return {{"tasks", s.tasks},
          {"episodes", s.episodes},
          {"correct_tasks", s.correct_tasks},
          {"compile_at_k", k_map(s.compile_at_k)},
          {"pass_at_k", k_map(s.pass_at_k)},
          {"fast_p", fast},
          {"fast_p_confident", confident},
          {"speedup_alpha_at_k", sp},
          {"geomean_speedup", s.geomean_speedup},
          {"speedup_tasks", s.speedup_tasks},
          {"untimed", s.untimed}};
}

namespace {
json backendbench_json(const BackendBenchScores& b) {
  json perf = json::object();
  for (const auto& [p, v] : b.perf_at_p) perf[threshold_label(p)] = v;
  return {{"operators", b.operators},
          {"correct", b.correct},
          {"correctness_score", b.correctness_score},
          {"performance_score", b.performance_score},
          {"perf_at_p", perf}};
}
}  // namespace

json to_json(const Slice& s) {
  json turns = json::array();
  for (std::size_t t = 0; t < s.by_turn.size(); ++t) {
    json j = to_json(s.by_turn[t]);
    j["turn"] = static_cast<int>(t + 1);
    turns.push_back(std::move(j));
  }
  return {{"value", s.value},        {"max_turn", s.max_turn},
          {"best", to_json(s.best)}, {"final", to_json(s.final_attempt)},
          {"by_turn", turns},        {"attempts", stats_json(s.stats)}};
}

json to_json(const TaskResult& t) {
  json j = {{"task", t.task},
            {"category", t.category},
            {"difficulty", t.difficulty},
            {"backend", t.backend},
            {"model", t.model},
            {"samples", t.samples},
            {"max_turn", t.max_turn},
            {"compiled_samples", t.compiled_samples},
            {"passed_samples", t.passed_samples},
            {"final_passed_samples", t.final_passed_samples},
            {"first_pass_turn", t.first_pass_turn},
            {"best_speedup", t.best_speedup()}};
  if (t.best) {
    j["best"] = {{"sample", t.best->sample},
                 {"turn", t.best->turn},
                 {"speedup", t.best->speedup},
                 {"t_candidate_ms", t.best->t_candidate_ms},
                 {"t_reference_ms", t.best->t_reference_ms},
                 {"achieved_gbps", t.best->achieved_gbps},
                 {"achieved_tflops", t.best->achieved_tflops},
                 {"source_sha", t.best->source_sha},
                 {"attempt_dir", t.best->attempt_dir}};
  } else {
    j["best"] = nullptr;
  }
  return j;
}

json generalisation_json(const std::map<std::string, Generalisation>& g) {
  json out = json::object();
  for (const auto& [task, v] : g)
    out[task] = {{"generalises", v.generalises ? json(*v.generalises) : json(nullptr)},
                 {"reason", v.reason},
                 {"source_sha", v.source_sha},
                 {"backend", v.backend},
                 {"outcome", v.outcome},
                 {"sub_kind", v.sub_kind},
                 {"unseen", v.unseen}};
  return out;
}

json to_json(const Summary& s) {
  json cfg = {{"ks", s.config.ks}, {"fast_ps", s.config.fast_ps}, {"alphas", s.config.alphas}};
  json cuts = json::object();
  for (const auto& [dim, slices] : s.cuts) {
    json arr = json::array();
    for (const auto& sl : slices) arr.push_back(to_json(sl));
    cuts[dim] = std::move(arr);
  }
  json tasks = json::array();
  for (const auto& t : s.tasks) tasks.push_back(to_json(t));
  json budget = json::array();
  for (const auto& b : s.budget)
    budget.push_back({{"samples", b.samples},
                      {"turn", b.turn},
                      {"calls", b.calls},
                      {"tokens", b.tokens},
                      {"pass", b.pass}});
  return {{"schema_version", s.schema_version},
          {"config", cfg},
          {"attempts", s.attempts},
          {"max_turn", s.max_turn},
          {"overall", to_json(s.overall)},
          {"cuts", cuts},
          {"tasks", tasks},
          {"llm_errors", s.llm_errors},
          {"infra_errors", s.infra_errors},
          {"unusable", s.unusable},
          {"generalisation", generalisation_json(s.generalisation)},
          {"precision_disallowed", s.precision_disallowed},
          {"credit_all_precision", to_json(s.credit_all_precision)},
          {"timing_anomalies", s.timing_anomalies},
          {"speedup_ci_rel_halfwidth", s.speedup_ci_rel_halfwidth},
          {"budget", budget},
          {"backendbench", backendbench_json(s.backendbench)},
          {"warnings", s.warnings}};
}

}  // namespace kforge
