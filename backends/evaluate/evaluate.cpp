#include "kforge/backends/evaluate.hpp"

#include <random>
#include <stdexcept>

#include "kforge/backends/tritonbench_perf.hpp"
#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace {

/// The backend's reading of a failure (Backend::explain_failure): a Python candidate's
/// exception as the outcome Python's error means, with TritonBench's group. Never for
/// infra_error: kforge's own failure is not the backend's to reread.
void explain(Evaluation& ev, bool at_build) {
  if (ev.backend == nullptr || ev.outcome == Outcome::infra_error || ev.outcome == Outcome::pass) return;
  std::string source;
  try {
    source = read_file(ev.compile.source_path);
  } catch (const std::exception&) {
  }
  const std::string name = ev.compile.source_path.filename().string();
  FailureFacts facts{ev.outcome, ev.sub_kind, ev.message, source, name, at_build};
  auto x = ev.backend->explain_failure(facts);
  if (!x) return;
  ev.outcome = x->outcome;
  ev.sub_kind = std::move(x->sub_kind);
  ev.error_group = std::move(x->error_group);
  ev.message = std::move(x->message);
}

}  // namespace

Evaluation compile_candidate(const Backend& backend, const std::string& source,
                             const std::filesystem::path& workdir, const EvalOptions& options) {
  Evaluation ev;
  ev.seed = options.seed;
  std::random_device rd;
  if (ev.seed < 0) ev.seed = std::uniform_int_distribution<int64_t>(1, 1'000'000'000)(rd);
  ev.compile = compile(backend, source, workdir, options.compile);
  ev.backend = &backend;
  ev.host = backend.host_kind();
  ev.compile_ms = static_cast<double>(ev.compile.wall.count());
  if (!ev.compile.ok()) {
    auto o = ev.compile.outcome();
    // No outcome: the toolchain itself is missing or broken, kforge's failure (infra_error).
    if (!o) ev.failure = FailureKind::toolchain;
    ev.outcome = o.value_or(Outcome::infra_error);
    if (ev.compile.sub_kind) ev.sub_kind = std::string(to_string(*ev.compile.sub_kind));
    if (ev.compile.status == CompileStatus::forbidden_api && !ev.compile.forbidden.empty())
      ev.sub_kind = ev.compile.forbidden.front().rule;
    if (ev.compile.status == CompileStatus::toolchain_missing) ev.sub_kind = "toolchain_missing";
    ev.message = ev.compile.summary;
    explain(ev, true);
  }
  return ev;
}

BenchResult bench_retimed(RunnerClient& runner, const TaskRef& task, const std::filesystem::path& artifact,
                          const BenchOptions& options, HostKind host) {
  BenchResult first = runner.bench(task, artifact, options, host);
  if (!first.ok || first.timing_unstable.empty() || !options.retime_unstable) return first;
  BenchResult second = runner.bench(task, artifact, options, host);
  if (!second.ok) return first;  // a failure while re-timed is judged by the next attempt, not this one
  second.timings = 2;
  second.bench_ms += first.bench_ms;
  if (!second.timing_unstable.empty())
    second.timing_unstable = "twice: " + second.timing_unstable + " (first: " + first.timing_unstable + ")";
  return second;
}

void check_and_bench(Evaluation& ev, RunnerClient& runner, const TaskRef& task, const EvalOptions& options,
                     const std::function<void()>& before_bench) {
  if (!ev.compile.ok()) throw std::logic_error("check_and_bench: the candidate did not compile");
  ev.check = runner.check(task, ev.compile.artifact, options.trials, ev.seed, ev.host);
  ev.check_ms = ev.check->check_ms;
  ev.outcome = ev.check->outcome;
  ev.sub_kind = ev.check->sub_kind;
  ev.message = ev.check->message;
  if (ev.outcome == Outcome::torch_fallback && ev.check->correct)  // compared all the same
    ev.message += *ev.check->correct ? " (its outputs match the reference: correct, but not a pass)"
                                     : " (its outputs are wrong as well: " + ev.check->correct_message + ")";
  ev.failure = ev.check->failure;
  explain(ev, false);
  if (ev.outcome != Outcome::pass || !options.bench) return;
  if (before_bench) before_bench();
  if (task.test_block())  // TritonBench: checked on its test block, timed on its performance inputs
    ev.bench =
        bench_tritonbench(runner, task, read_file(ev.compile.artifact),
                          ev.compile.artifact.parent_path() / "tritonbench_perf", options.bench_options);
  else
    ev.bench = bench_retimed(runner, task, ev.compile.artifact, options.bench_options, ev.host);
  ev.bench_ms = ev.bench->bench_ms;
  // What of a TritonBench task was not timed or left out of its Speed Up (below the launch
  // floor), and why; the clones of one timed in place; an output verified only where the
  // reference determines it.
  if (ev.bench->ok)
    for (const auto& f : ev.bench->flags)
      if (f.find("not timed") != std::string::npos ||
          f.find("left out of the Speed Up") != std::string::npos || f.rfind("in place:", 0) == 0 ||
          f.find(" verified on ") != std::string::npos)
        ev.message += (ev.message.empty() ? "" : "; ") + f;
  if (!ev.bench->ok) {
    // A candidate that passed the check but fails while timed (a hang, a wrong answer on a timed
    // repetition: bench_only), or the judge failed (infra_error).
    ev.failure = ev.bench->failure;
    ev.outcome = ev.bench->outcome;
    ev.sub_kind = ev.bench->sub_kind;
    ev.message = ev.bench->message;
    explain(ev, false);
    ev.message = "failed while being benchmarked: " + ev.message;
  }
}

Evaluation evaluate(const Backend& backend, const std::string& source, const std::filesystem::path& workdir,
                    RunnerClient& runner, const TaskRef& task, const EvalOptions& options) {
  Evaluation ev = compile_candidate(backend, source, workdir, options);
  if (ev.compile.ok()) check_and_bench(ev, runner, task, options);
  return ev;
}

}  // namespace kforge::backends
