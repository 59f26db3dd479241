// The candidate's side of a TritonBench test block (judge.hpp check_testblock): the block run
// in a confined Triton host under each seed, its results compared leaf by leaf with the
// gold's (testblock_gold.cpp), and the PyTorch ops and launches it made held to the gold's.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "testblock_gold.hpp"

namespace kforge::runner {

namespace {

/// The PyTorch ops the candidate's side ran beyond the reference's test block, line by line
/// ("aten.relu x2 at line 14, aten.mul outside the block"), "" when none: `got` is the
/// candidate host's counts (ops outside its allow-list only), `allowance` the judge's.
std::string excess_ops(const json& got, const json& allowance) {
  std::string out;
  if (!got.is_object()) return "unreadable op counts";
  for (const auto& [line, ops] : got.items()) {
    if (!ops.is_object()) return "unreadable op counts";
    for (const auto& [op, n] : ops.items()) {
      const long have = n.is_number_integer() ? n.get<long>() : 1L << 40;
      long may = 0;
      if (allowance.is_object() && allowance.contains(line) && allowance[line].contains(op) &&
          allowance[line][op].is_number_integer())
        may = allowance[line][op].get<long>();
      if (have <= may) continue;
      const std::string where =
          line.size() > 1 && line[0] == 'L' ? "at line " + line.substr(1) : "outside the block";
      out += (out.empty() ? "" : ", ") + op + " x" + std::to_string(have - may) + " " + where;
    }
  }
  return out;
}

/// The entry points in `must` (the reference's Leaves::launch) that the host says returned from
/// a call without launching a Triton kernel (`got`: its JSON list), joined: "" when none. An
/// unreadable list counts as every entry point.
std::string without_launch(const json& got, const std::vector<std::string>& must) {
  std::string out;
  for (const auto& name : must) {
    bool idle = !got.is_array();
    for (std::size_t i = 0; !idle && i < got.size(); ++i) idle = got[i].is_string() && got[i] == name;
    if (idle) out += (out.empty() ? "" : ", ") + name + "()";
  }
  return out;
}

/// The Triton host's `allow` lines of a test block: the request's allow_ops, and the PyTorch ops
/// a Triton reference's entry points ran (TritonBench-G's gold code mixes them with its
/// kernels: a candidate that runs the same ops is not a torch_fallback).
std::vector<std::string> testblock_allow_lines(const protocol::TestblockRequest& req,
                                               const std::vector<Leaves>& refs) {
  std::vector<std::string> lines = allow_lines(req.candidate);
  std::set<std::string> ops;
  for (const auto& r : refs) ops.insert(r.ops.begin(), r.ops.end());
  std::string line;
  for (const auto& op : ops) line += (line.empty() ? "" : ",") + op;
  if (!line.empty()) lines.push_back("allow " + line);
  return lines;
}

std::vector<TensorSpec> specs_of(const std::vector<HeldTensor>& ts) {
  std::vector<TensorSpec> v;
  for (std::size_t j = 0; j < ts.size(); ++j)
    v.push_back(
        {"result " + std::to_string(j), "output", ts[j].t.sizes().vec(), dtype_name(ts[j].t.scalar_type())});
  return v;
}

/// Numbers within the tolerance of float32, anything else equal.
bool same_value(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return x == y || (std::isnan(x) && std::isnan(y)) || std::fabs(x - y) <= 1e-5 + 1e-3 * std::fabs(y);
  }
  return a == b;
}

/// How a restricted comparison of tensor result `j` is described: "" when the gold determines
/// all of its elements.
std::string restriction(const Leaves& ref, std::size_t j) {
  if (j >= ref.masks.size() || !ref.masks[j].t.defined()) return "";
  const int64_t kept = ref.masks[j].t.sum().item<int64_t>(), all = ref.masks[j].t.numel();
  if (kept == all) return "";
  return "compared on " + std::to_string(kept) + " of " + std::to_string(all) +
         " elements: the gold leaves the rest unwritten, reads past its tensors for it, or is "
         "nondeterministic";
}

/// "; result j compared on N of M elements: ..." for each restricted result, "" when none.
std::string restrictions(const Leaves& ref) {
  std::string out;
  for (std::size_t j = 0; j < ref.tensors.size(); ++j)
    if (const std::string note = restriction(ref, j); !note.empty())
      out += "; result " + std::to_string(j) + " " + note;
  return out;
}

/// The results of one seed's run against the reference's: nullopt when they match. A tensor
/// result the gold determines only in part is compared on that part (the reference's mask).
std::optional<json> compare_results(Session& s, const Leaves& ref, const std::string& others,
                                    const Tolerances& tol, const std::string& where, Figures& fig) {
  if (!s.ex->canaries_intact())
    return failure("runtime_error", "out_of_bounds_write", "the candidate wrote outside its results' memory");
  for (std::size_t j = 0; j < ref.tensors.size(); ++j) {
    const bool masked = j < ref.masks.size() && ref.masks[j].t.defined();
    Comparison cmp = masked ? compare_masked(s.ex->out(0, j), ref.tensors[j].t, ref.masks[j].t, tol)
                            : compare_chunked(s.ex->out(0, j), ref.tensors[j].t, tol);
    fig.add(cmp);
    if (!cmp.ok) {
      const std::string note = restriction(ref, j);
      return mismatch_reply(
          cmp, cmp.sub_kind,
          where + ", result " + std::to_string(j) + (note.empty() ? "" : " (" + note + ")"));
    }
  }
  const json got = json::parse(others, nullptr, false);
  bool same = got.is_array() && got.size() == ref.others.size();
  for (std::size_t i = 0; same && i < got.size(); ++i)
    same = got[i].size() == 2 && got[i][0] == ref.others[i][0] && same_value(got[i][1], ref.others[i][1]);
  if (!same)
    return failure("output_mismatch", "value",
                   where + ": the results that are not tensors differ: expected " + ref.others.dump() +
                       ", got " + others.substr(0, 400));
  return std::nullopt;
}

/// One seed's run of the test block in the host (`testblock <seq> <seed> [fresh]`: fresh, the
/// block's floating literals drawn anew, as the reference's were), its outputs poisoned first;
/// nullopt when it matched. The host's reply carries its recorder's op counts by line of the
/// block and the entry points that returned from a call without a Triton launch
/// (`tested <seq> ok <counts> <launchless> <others>`, the counts written by
/// libkforge_pyseal.so): ops beyond the reference's own at any line, or outside the block, make
/// a torch_fallback, whose results are compared all the same (`correct`: TritonBench counts
/// correct PyTorch code, issue 22 §3); so do right results from a call of an entry point in
/// the reference's `launch` without a launch (no_triton_launch; wrong ones stay a mismatch).
std::optional<json> test_seed(const JudgeContext& ctx, Session& s, const Leaves& ref, int64_t seed,
                              const Tolerances& tol, const Deadline& dl, const std::string& where,
                              Figures& fig) {
  s.ex->poison(0);
  sync_device(ctx.device);
  s.host->resume();
  const std::string seq = std::to_string(++s.seq);
  HostFailure f;
  auto r = s.host->request("testblock " + seq + " " + std::to_string(seed) + (ref.fresh ? " fresh" : ""),
                           dl.left(), &f, "tested " + seq + " ", true);
  s.host->freeze();  // already, at its reply (and when it failed)
  sync_device(ctx.device);
  if (!r) return failure(f);
  std::istringstream in(*r);
  std::string tested, sq, status, counts, rest;
  in >> tested >> sq >> status;
  if (status != "ok") {
    std::string kind;
    std::getline(in >> std::ws, rest);
    std::istringstream e(rest);
    e >> kind;
    std::getline(e >> std::ws, rest);
    return host_error(kind, host_text(rest), where);
  }
  std::string launchless;
  in >> counts >> launchless;
  std::getline(in >> std::ws, rest);
  const std::string excess = excess_ops(json::parse(counts, nullptr, false), ref.counts);
  const std::string idle = without_launch(json::parse(launchless, nullptr, false), ref.launch);
  auto failed = compare_results(s, ref, rest, tol, where, fig);
  // Results that are wrong anyway are the mismatch they are (a candidate that does nothing);
  // right results without a Triton launch were computed some other way: a torch_fallback.
  if (excess.empty() && (idle.empty() || failed)) return failed;
  json fallback =
      excess.empty()
          ? failure("torch_fallback", "no_triton_launch",
                    where + ": " + idle +
                        " returned without launching a Triton kernel (each call of an entry point from the "
                        "test block must launch one, as the task's own calls do)")
          : failure("torch_fallback", "",
                    "the candidate ran PyTorch compute instead of Triton kernels, beyond what the test "
                    "block itself runs: " +
                        host_text(excess));
  fallback["correct"] = !failed;
  if (failed) fallback["correct_message"] = failed->value("message", std::string());
  return fallback;
}

/// The candidate's session for a test block: an exchange for the gold's tensor results, and a
/// confined Triton host told the allowed ops (testblock_allow_lines) and the block (`testsrc`:
/// the test source, its function, the entry points and those each call of which must launch a
/// Triton kernel). The reply when the candidate failed to load.
std::optional<json> open_testblock(const JudgeContext& ctx, const protocol::TestblockRequest& req,
                                   const std::vector<Leaves>& refs, Session& s, const Deadline& dl,
                                   Laps& laps) {
  s.ex = std::make_unique<Exchange>(ctx.device, std::vector<TensorSpec>{}, std::vector<bool>{},
                                    specs_of(refs[0].tensors), 1);
  std::set<std::string> launch;  // the entry points the host watches for launches
  for (const auto& r : refs) launch.insert(r.launch.begin(), r.launch.end());
  json src{{"test", req.test_source},
           {"function", req.test_function},
           {"entries", req.entries},
           {"launch", launch}};
  std::vector<std::string> before = testblock_allow_lines(req, refs);
  before.push_back("testsrc " + src.dump(-1, ' ', false, json::error_handler_t::replace));
  return open_session(ctx, req.candidate, s, dl, laps, before);
}

/// The seed's gold results have the first seed's count, shapes and dtypes (the exchange's).
bool same_shapes(const Leaves& a, const Leaves& b) {
  return a.tensors.size() == b.tensors.size() &&
         std::equal(a.tensors.begin(), a.tensors.end(), b.tensors.begin(),
                    [](const HeldTensor& x, const HeldTensor& y) {
                      return x.t.sizes() == y.t.sizes() && x.t.scalar_type() == y.t.scalar_type();
                    });
}

/// A seed that failed after a torch_fallback, or with one: the first makes the attempt's
/// outcome (`trials_passed`: the seeds before it), whatever follows. True when this seed's
/// results were right (the seeds go on for `correct`); false when they were wrong (the verdict's
/// `correct` is then false, and the check stops).
bool note_fallback(const json& failed, int passed, std::optional<json>& verdict) {
  if (!verdict) {
    verdict = failed;
    (*verdict)["trials_passed"] = passed;
  }
  const bool correct =
      failed.value("outcome", std::string()) == "torch_fallback" && failed.value("correct", false);
  if (!correct) {
    (*verdict)["correct"] = false;
    (*verdict)["correct_message"] = failed.value("correct_message", failed.value("message", std::string()));
  }
  return correct;
}

/// The record says when a comparison left elements out: once for the seeds that left out the
/// same ones (the message is what a reader sees of the record, cut at a few hundred characters).
std::string restricted_seeds(const std::vector<Leaves>& refs, int64_t seed, int trials) {
  std::vector<std::string> notes;
  for (int i = 0; i < trials; ++i) notes.push_back(restrictions(refs[i]));
  std::string restricted;
  for (int i = 0; i < trials;) {
    int j = i + 1;
    while (j < trials && notes[j] == notes[i]) ++j;
    if (!notes[i].empty())
      restricted += (restricted.empty() ? "" : "; ") +
                    (j - i == 1 ? "seed " + std::to_string(seed + i)
                                : "seeds " + std::to_string(seed + i) + "-" + std::to_string(seed + j - 1)) +
                    ": " + notes[i].substr(2);
    i = j;
  }
  return restricted;
}

}  // namespace

json check_testblock(const JudgeContext& ctx, const protocol::TestblockRequest& req) {
  const auto t0 = Clock::now();
  const Tolerances tol = tolerances_of(req.tolerances);
  const int64_t seed = req.seed;
  const int trials = req.trials;
  const std::string device = ctx.device.is_cuda() ? "cuda" : "cpu";
  Laps laps;
  py::object tb = testblock_module(ctx);
  std::vector<Leaves> refs;
  bool twice = true;
  if (auto failed = gold_results(ctx, tb, req, device, refs, twice)) return *failed;
  laps.lap("reference_ms");
  // The candidate's time starts now: the reference's own (a TritonBench-G reference compiles its
  // Triton kernels here) is never taken out of the candidate's deadline.
  const Deadline dl(req.deadline_ms);
  Session s;
  if (auto r = open_testblock(ctx, req, refs, s, dl, laps)) return *r;
  json checks = json::array(
      {twice ? "the gold's test block: run twice under each seed, its uninitialised memory poisoned "
               "differently (gold agreement)"
             : "the gold's test block: run once under each seed (it agreed with itself on every element "
               "in an earlier check on this worker)"});
  int passed = 0;
  Figures fig;
  std::optional<json> verdict;  // a torch_fallback: the outcome; the seeds go on for `correct`
  for (int i = 0; i < trials; ++i) {
    const std::string where =
        "test block, seed " + std::to_string(seed + i) + (refs[i].fresh ? " (fresh literal inputs)" : "");
    if (!same_shapes(refs[i], refs[0])) {
      checks.push_back(where + ": skipped (the reference's results change shape with the seed)");
      continue;
    }
    auto failed = test_seed(ctx, s, refs[i], seed + i, tol, dl, where, fig);
    if (!failed) {
      checks.push_back(where + ": " + std::to_string(refs[i].tensors.size()) + " tensor result(s) match" +
                       restrictions(refs[i]));
      ++passed;
      continue;
    }
    if (!verdict && failed->value("outcome", std::string()) != "torch_fallback") {
      (*failed)["trials"] = trials;
      (*failed)["trials_passed"] = passed;
      (*failed)["checks"] = checks;
      (*failed)["check_ms"] = ms_since(t0);
      return *failed;
    }
    if (!note_fallback(*failed, passed, verdict)) break;
    checks.push_back(where + ": " + std::to_string(refs[i].tensors.size()) +
                     " tensor result(s) match (PyTorch compute)" + restrictions(refs[i]));
  }
  if (verdict) {
    (*verdict)["trials"] = trials;
    (*verdict)["checks"] = checks;
    (*verdict)["check_ms"] = ms_since(t0);
    return *verdict;
  }
  laps.lap("candidate_ms");
  return {{"ok", true},
          {"outcome", "pass"},
          {"message", restricted_seeds(refs, seed, trials)},
          {"trials", trials},
          {"trials_passed", passed},
          {"gold_runs", twice ? 2 : 1},
          {"checks", checks},
          {"check_ms", ms_since(t0)},
          {"phases", laps.to_json()},
          {"max_abs_err", fig.max_abs},
          {"max_rel_err", fig.max_rel},
          {"tolerance_ratio", fig.max_ratio},
          {"mismatch_fraction", 0.0}};
}

}  // namespace kforge::runner
