// agent/src/generalisation_check.cpp — library kernels judged on unseen shapes
// (generalisation_check.hpp).
#include "kforge/agent/generalisation_check.hpp"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kforge/agent/evaluation.hpp"
#include "kforge/agent/run_exit.hpp"
#include "kforge/benchmarks/generalisation.hpp"
#include "kforge/benchmarks/operators.hpp"
#include "kforge/benchmarks/report.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/benchmarks/task.hpp"
#include "kforge/common/beneath.hpp"
#include "kforge/common/util.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kforge::agent {

namespace {

/// What the run recorded about how it judged (its manifest's config).
struct RunConfig {
  std::string suite_root, backend, profile, device;
  int trials = 5;
  std::vector<std::string> allow_ops, allow_precision;
};

RunConfig run_config(const fs::path& run_dir) {
  RunConfig c;
  json m =
      json::parse(fs::is_regular_file(run_dir / "manifest.json") ? read_file(run_dir / "manifest.json") : "",
                  nullptr, false);
  if (!m.is_object() || !m.contains("config") || !m["config"].is_object()) return c;
  const json& k = m["config"];
  c.suite_root = k.value("suite_root", "");
  c.backend = k.value("backend", "");
  c.profile = k.value("profile", "default");
  c.device = k.value("device", "");
  if (c.device.empty() && m.contains("devices") && m["devices"].is_array() && !m["devices"].empty())
    c.device = m["devices"][0].value("device", "");
  if (k.contains("trials") && k["trials"].is_number_integer()) c.trials = k["trials"].get<int>();
  for (const char* key : {"allow_ops", "allow_precision"})
    if (k.contains(key) && k[key].is_array())
      for (const auto& v : k[key])
        if (v.is_string()) (std::string(key) == "allow_ops" ? c.allow_ops : c.allow_precision).push_back(v);
  return c;
}

Generalisation unknown(const LibraryKernel& k, std::string why) {
  Generalisation g;
  g.source_sha = k.result->best->source_sha;
  g.backend = k.result->best->backend;
  g.reason = std::move(why);
  return g;
}

/// The unseen shapes of one task, or the reason it has none. Operators append their unseen cases
/// to `trace`.
std::optional<std::string> unseen_of(const Task& t, const std::string& profile, std::string& trace,
                                     std::string& why) {
  if (t.format == TaskFormat::tritonbench_t || t.format == TaskFormat::tritonbench_g) {
    why = "a TritonBench task is judged by its own test block: it has no shape profile";
    return std::nullopt;
  }
  if (t.format == TaskFormat::aten_operator) {
    std::size_t changed = 0;
    auto cases = unseen_cases(t.cases, &changed);
    if (changed == 0) {
      why = "no case has a size >= 16: the unseen cases would be the shown ones";
      return std::nullopt;
    }
    trace += trace_text(t.aten_op, cases);
    for (std::size_t i = 0; i < cases.size(); ++i)
      if (cases[i].args != case_args_text(t.cases[i]))
        return std::to_string(changed) + "/" + std::to_string(cases.size()) + " cases changed, e.g. " +
               case_args_text(t.cases[i]) + " -> " + cases[i].args;
    return std::to_string(changed) + " cases changed";
  }
  const std::string base = profile.empty() || profile == "default" ? "default" : profile;
  auto src = apply_profile(t, base);
  auto sp = src ? unseen_profile(*src) : std::nullopt;
  if (!sp) {
    why = "no unseen profile: get_inputs()'s shapes are not understood or no constant is >= 16";
    return std::nullopt;
  }
  std::string s = (base == "default" ? std::string("unseen") : base + "+unseen") + ":";
  for (const auto& c : sp->changes) s += " " + c;
  return s;
}

/// The eval's verdict on one task as a Generalisation.
Generalisation verdict(const LibraryKernel& k, const std::map<std::string, AttemptRecord>& recs,
                       const std::map<std::string, std::string>& unusable, const std::string& task) {
  Generalisation g = unknown(k, "");
  auto it = recs.find(task);
  if (it == recs.end()) {
    auto u = unusable.find(task);
    g.reason = u != unusable.end() ? "the reference does not run on the unseen shapes: " + u->second
                                   : "not judged (the eval recorded nothing for it)";
    return g;
  }
  const AttemptRecord& r = it->second;
  g.outcome = std::string(to_string(r.outcome));
  g.sub_kind = r.sub_kind;
  std::string msg = r.message;
  if (msg.size() > 240) msg = msg.substr(0, 240) + "...";
  if (g.outcome == "pass") {
    g.generalises = true;
    g.reason = "passes on the unseen shapes";
  } else if (g.outcome == "infra_error") {
    g.reason = "could not be judged on the unseen shapes (infra_error): " + msg;
  } else {
    g.generalises = false;
    g.reason = "fails on the unseen shapes: " + g.outcome + (g.sub_kind.empty() ? "" : "/" + g.sub_kind) +
               (msg.empty() ? "" : ": " + msg);
  }
  return g;
}

std::map<std::string, std::string> unusable_of(const fs::path& out) {
  std::map<std::string, std::string> m;
  json j = json::parse(fs::is_regular_file(out / "unusable.json") ? read_file(out / "unusable.json") : "",
                       nullptr, false);
  if (j.is_object())
    for (const auto& [t, w] : j.items()) m[t] = w.is_string() ? w.get<std::string>() : w.dump();
  return m;
}

/// The eval that judges the library's kernels (written under `work`/kernels) on unseen shapes:
/// the run's backend, trials and allowances, no bench, no profile; an operator suite's unseen
/// cases (`trace`, written to `work`/unseen) or the run's suite at its profile's unseen shapes.
EvalCommand unseen_eval(const RunConfig& rc, const GeneralisationCommand& cmd, const fs::path& work,
                        const std::string& trace) {
  EvalCommand ev;
  ev.backend = rc.backend;
  ev.kernels = work / "kernels";
  ev.out = work / "eval";
  ev.device = cmd.device.empty() ? rc.device : cmd.device;
  ev.trials = rc.trials;
  ev.bench = false;
  ev.profiler = "none";
  ev.allow_ops = rc.allow_ops;
  ev.allow_precision = rc.allow_precision;
  if (!trace.empty()) {
    write_file(work / "unseen" / "operators.txt", trace);
    ev.suite = (work / "unseen").string();
  } else {
    ev.suite = rc.suite_root;
    ev.profile = rc.profile.empty() || rc.profile == "default" ? "unseen" : rc.profile + "+unseen";
  }
  return ev;
}

/// Prints one line per library kernel and the closing count; counts the verdicts into `tally`.
void print_verdicts(const std::map<std::string, Generalisation>& verdicts, const fs::path& run_dir,
                    GeneralisationTally& tally) {
  std::printf("\n%-40s %-12s %s\n", "library kernel", "generalises", "reason");
  for (const auto& [task, g] : verdicts) {
    (!g.generalises ? tally.unknown : *g.generalises ? tally.yes : tally.no)++;
    std::printf("%-40s %-12s %s\n", task.c_str(), generalises_text(g.generalises).c_str(), g.reason.c_str());
  }
  std::printf(
      "kforge library export: on unseen shapes %d generalise, %d do not, %d unknown (%d judged now) -> %s\n",
      tally.yes, tally.no, tally.unknown, tally.judged, generalisation_path(run_dir).string().c_str());
  std::fflush(stdout);
}

}  // namespace

GeneralisationTally check_generalisation(const GeneralisationCommand& cmd) {
  GeneralisationTally tally;
  const RunConfig rc = run_config(cmd.run_dir);
  const Summary s = summarize_run(cmd.run_dir);
  const auto kernels = library_kernels(cmd.run_dir, s);
  GeneralisationFile out;
  if (auto old = read_generalisation(cmd.run_dir)) out = std::move(*old);
  std::map<std::string, Generalisation> verdicts;  // this library's kernels only
  std::optional<Suite> suite;
  try {
    if (!rc.suite_root.empty()) suite = load_suite(rc.suite_root);
  } catch (const std::exception&) {
  }
  const fs::path work = cmd.run_dir / "generalisation";  // the last judging's kernels and eval (its evidence)
  bool cleared = false;
  std::string trace;  // operators' unseen cases
  std::map<std::string, std::string> shapes;
  std::set<std::string> todo;
  for (const auto& [task, k] : kernels) {
    const AttemptRecord& r = *k.result->best;
    if (auto v = generalisation_of(out.kernels, task, r.source_sha); v && !cmd.again) {
      verdicts[task] = *v;
      continue;
    }
    const Task* t = suite ? suite->find(task) : nullptr;
    std::string why;
    if (r.backend != rc.backend) why = "backend " + r.backend + ": the run's judge was " + rc.backend;
    if (!t && why.empty()) why = "the run's suite (" + rc.suite_root + ") no longer has this task";
    std::optional<std::string> unseen;
    if (why.empty()) unseen = unseen_of(*t, rc.profile, trace, why);
    if (!unseen) {
      verdicts[task] = unknown(k, why);
      continue;
    }
    shapes[task] = *unseen;
    if (!cleared) {  // verdicts reused alone keep the earlier evidence
      std::error_code ec;
      fs::remove_all(work, ec);
      cleared = true;
    }
    fs::create_directories(work / "kernels");
    write_file_beneath(work / "kernels", fs::path(task) / k.file_name, k.source);
    todo.insert(task);
  }
  if (!todo.empty()) {
    const EvalCommand ev = unseen_eval(rc, cmd, work, trace);
    std::printf("kforge library export: judging %zu library kernel(s) on unseen shapes (%s)\n", todo.size(),
                trace.empty() ? ev.profile.c_str() : "unseen operator cases");
    std::fflush(stdout);
    const int status = run_eval(ev);
    if (status != 0 && status != kExitInfraError) tally.status = status;
    const auto recs = eval_records(ev.out);
    const auto unusable = unusable_of(ev.out);
    for (const auto& task : todo) {
      Generalisation g = verdict(kernels.at(task), recs, unusable, task);
      if (tally.status != 0 && !g.generalises)
        g.reason = "the eval could not run (exit " + std::to_string(tally.status) + "): " + g.reason;
      g.unseen = shapes[task];
      verdicts[task] = std::move(g);
      ++tally.judged;
    }
    out.profile = trace.empty() ? ev.profile : "unseen operator cases";
    out.device = ev.device.empty() ? "(the backend's default)" : ev.device;
    out.checked_at = iso8601_utc_now();
  }
  out.rule = unseen_rule_text();
  out.kernels = verdicts;
  write_generalisation(cmd.run_dir, out);
  print_verdicts(verdicts, cmd.run_dir, tally);
  return tally;
}

}  // namespace kforge::agent
