// runs/src/judge_stats.cpp — a run's judge slot time by phase and by slot (judge_stats.hpp).
#include "kforge/runs/judge_stats.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace kforge {

namespace {

struct Sum {
  double ms = 0;
  int n = 0;
  bool implied = false;  ///< not recorded itself: a parent of recorded phases
};
using Sums = std::map<std::string, Sum>;

std::string parent_of(const std::string& p) {
  const auto dot = p.rfind('.');
  return dot == std::string::npos ? "" : p.substr(0, dot);
}

/// Where a phase sorts among its siblings: the pipeline's order first, then by total time.
int rank(const std::string& p) {
  static const std::vector<std::string> order{
      "wait", "load", "judge", "judge.check", "judge.bench", "judge.precision", "judge.profile", "record"};
  auto it = std::find(order.begin(), order.end(), p);
  return it == order.end() ? static_cast<int>(order.size()) : static_cast<int>(it - order.begin());
}

void emit(const std::string& node, int depth, const Sums& sums,
          const std::map<std::string, std::vector<std::string>>& kids, std::vector<PhaseTotal>& out) {
  const Sum& s = sums.at(node);
  double children = 0;
  auto it = kids.find(node);
  if (it != kids.end())
    for (const auto& k : it->second) children += sums.at(k).ms;
  out.push_back({node, s.implied ? children : s.ms, s.n, depth});
  if (it == kids.end()) return;
  for (const auto& k : it->second) emit(k, depth + 1, sums, kids, out);
  if (!s.implied && s.ms - children > 1e-3 * std::max(1.0, s.ms))
    out.push_back({node + ".(other)", s.ms - children, s.n, depth + 1});
}

std::vector<PhaseTotal> phase_tree(Sums sums) {
  for (auto names = sums; const auto& [p, s] : names)
    for (std::string q = parent_of(p); !q.empty(); q = parent_of(q))
      if (!sums.count(q)) sums[q].implied = true;
  std::map<std::string, std::vector<std::string>> kids;
  for (const auto& [p, s] : sums) kids[parent_of(p)].push_back(p);
  for (auto& [parent, v] : kids)
    std::sort(v.begin(), v.end(), [&](const std::string& a, const std::string& b) {
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return sums.at(a).ms > sums.at(b).ms;
    });
  std::vector<PhaseTotal> out;
  for (const auto& root : kids[""]) emit(root, 0, sums, kids, out);
  return out;
}

SlotUse slot_use(const std::string& session, const std::string& slot, std::vector<SlotJob> jobs) {
  SlotUse u{session, slot, static_cast<int>(jobs.size()), 0, 0, 0};
  std::sort(jobs.begin(), jobs.end(),
            [](const SlotJob& a, const SlotJob& b) { return a.queued_ms < b.queued_ms; });
  double lo = 0, hi = 0, first = jobs.front().queued_ms, last = 0;
  bool open = false;
  for (const auto& j : jobs) {
    const double end = std::max(j.end_ms, j.start_ms);
    u.busy_ms += end - j.start_ms;
    last = std::max(last, end);
    if (open && j.queued_ms <= hi) {
      hi = std::max(hi, end);
      continue;
    }
    if (open) u.queued_ms += hi - lo;
    lo = j.queued_ms, hi = end, open = true;
  }
  u.queued_ms += hi - lo;
  u.span_ms = last - first;
  return u;
}

std::string label(const PhaseTotal& p) {
  static const std::map<std::string, std::string> names{{"wait", "wait (queued for a slot)"},
                                                        {"load", "load (task load, reference set-up)"},
                                                        {"judge", "judge (slot held for the attempt)"},
                                                        {"record", "record (attempt files; not slot time)"}};
  if (auto it = names.find(p.phase); it != names.end()) return it->second;
  std::string last = "(other)";
  if (!p.phase.ends_with(".(other)")) {
    const auto dot = p.phase.rfind('.');
    last = dot == std::string::npos ? p.phase : p.phase.substr(dot + 1);
  }
  return std::string(static_cast<std::size_t>(2 * p.depth), ' ') + last;
}

}  // namespace

JudgeStats judge_stats(const std::vector<AttemptRecord>& records) {
  JudgeStats st;
  st.attempts = static_cast<int>(records.size());
  Sums sums;
  std::map<std::pair<std::string, std::string>, std::vector<SlotJob>> by_slot;
  for (const auto& r : records) {
    if (r.judge.empty()) continue;
    ++st.timed;
    for (const auto& [p, ms] : r.judge.phases_ms) {
      sums[p].ms += ms;
      ++sums[p].n;
    }
    for (const auto& j : r.judge.jobs) {
      ++(j.kind == "load" ? st.loads : st.judges);
      by_slot[{r.judge.session, j.slot}].push_back(j);
    }
  }
  st.phases = phase_tree(std::move(sums));
  for (auto& [key, jobs] : by_slot) st.slots.push_back(slot_use(key.first, key.second, std::move(jobs)));
  return st;
}

std::string render_judge_stats(const JudgeStats& s) {
  std::string out;
  char b[512];
  std::snprintf(b, sizeof b,
                "judge timing: %d of %d attempts timed; %d task loads, %d judge jobs on the slots\n\n",
                s.timed, s.attempts, s.loads, s.judges);
  out += b;
  double busy = 0, queued = 0, span = 0;
  for (const auto& u : s.slots) busy += u.busy_ms, queued += u.queued_ms, span += u.span_ms;
  std::snprintf(b, sizeof b, "%-44s %10s %9s %10s %8s\n", "phase", "total s", "attempts", "mean ms",
                "% busy");
  out += b;
  for (const auto& p : s.phases) {
    const bool slot_time = p.phase.rfind("load", 0) == 0 || p.phase.rfind("judge", 0) == 0;
    char share[32] = "-";
    if (slot_time && busy > 0) std::snprintf(share, sizeof share, "%.1f", 100.0 * p.total_ms / busy);
    std::snprintf(b, sizeof b, "%-44s %10.2f %9d %10.1f %8s\n", label(p).c_str(), p.total_ms / 1e3,
                  p.attempts, p.attempts ? p.total_ms / p.attempts : 0.0, share);
    out += b;
  }
  std::snprintf(b, sizeof b, "\n%-12s %-26s %6s %10s %12s %7s %10s %7s\n", "slot", "session", "jobs",
                "busy s", "queued s", "busy %", "span s", "of span");
  out += b;
  for (const auto& u : s.slots) {
    std::snprintf(b, sizeof b, "%-12s %-26s %6d %10.2f %12.2f %7.1f %10.2f %7.1f\n", u.slot.c_str(),
                  u.session.c_str(), u.jobs, u.busy_ms / 1e3, u.queued_ms / 1e3, 100.0 * u.busy_fraction(),
                  u.span_ms / 1e3, u.span_ms > 0 ? 100.0 * u.busy_ms / u.span_ms : 0.0);
    out += b;
  }
  std::snprintf(
      b, sizeof b,
      "\njudge slots busy %.2f s of the %.2f s in which work was queued for them (%.1f%%; %.1f%% of "
      "their %.2f s from first job queued to last job done)\n",
      busy / 1e3, queued / 1e3, queued > 0 ? 100.0 * busy / queued : 0.0,
      span > 0 ? 100.0 * busy / span : 0.0, span / 1e3);
  out += b;
  return out;
}

}  // namespace kforge
