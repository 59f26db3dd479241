#include "kforge/backends/profile_step.hpp"

#include "kforge/common/util.hpp"
#include "kforge/sandbox/subprocess.hpp"

namespace kforge::backends {

namespace fs = std::filesystem;

namespace {

/// The first "==ERROR==" line of ncu's output, without the marker; "" when none.
std::string ncu_error_line(const std::string& text) {
  for (const auto& line : split_lines(text))
    if (auto p = line.find("==ERROR=="); p != std::string::npos) return trim(line.substr(p + 9));
  return "";
}

}  // namespace

NcuRun run_ncu(const std::vector<NcuMetric>& metrics, const std::vector<std::string>& target,
               const NcuOptions& opt, std::chrono::milliseconds timeout) {
  NcuRun run;
  sandbox::Spec spec;
  spec.argv = ncu_argv(metrics, target, opt);
  spec.limits.wall = timeout;
  // ncu talks to the process it profiles over loopback; a private network namespace would
  // leave it without one. The profiled candidate is still confined (no sockets: seccomp).
  spec.isolate_network = false;
  // A scratch directory of its own for ncu and the profiled process (its lock file; the
  // candidate host may write nothing else: ConfinePolicy::scratch_dirs), removed afterwards.
  std::error_code ec;
  const fs::path scratch = opt.report_csv.parent_path() / "tmp";
  fs::create_directories(scratch, ec);
  spec.env_set["TMPDIR"] = scratch.string();
  spec.env_set["KFORGE_PROFILE_SCRATCH"] = scratch.string();
  fs::remove(opt.report_csv, ec);
  const sandbox::Result r = sandbox::run(spec);
  fs::remove_all(scratch, ec);
  run.wall_ms = static_cast<double>(r.wall.count());
  const std::string csv = fs::exists(opt.report_csv, ec) ? read_file(opt.report_csv) : "";
  run.report = parse_ncu_csv(csv);
  if (!run.report.empty()) return run;
  std::string why = ncu_error_line(csv + "\n" + r.out + "\n" + r.err);
  if (r.status == sandbox::Status::failed_to_start)
    why = "ncu could not start: " + r.error;
  else if (r.status == sandbox::Status::timed_out)
    why = "ncu did not finish within " + std::to_string(timeout.count() / 1000) + " s";
  else if (why.empty() && !r.ok())
    why = "the profiled process failed (exit " + std::to_string(r.exit_code) +
          "): " + truncate_middle(trim(r.err.empty() ? r.out : r.err), 300);
  else if (why.empty())
    why = "ncu reported no kernel";
  run.error = why;
  return run;
}

NcuProfiler::NcuProfiler(fs::path ncu, std::vector<NcuMetric> metrics, std::chrono::milliseconds timeout)
    : ncu_(std::move(ncu)), metrics_(std::move(metrics)), timeout_(timeout) {}

NcuProfile NcuProfiler::profile(RunnerClient& runner, const TaskRef& task, const fs::path& artifact,
                                const fs::path& dir) {
  NcuProfile p;
  std::string error;
  auto targets = runner.profile_targets(task, artifact, dir, 3000, &error);
  if (!targets) {
    p.note = "not profiled: " + error;
    return p;
  }
  NcuOptions opt;
  opt.ncu = ncu_;
  opt.profile_from_start = false;
  opt.launch_count = kMaxLaunches;
  opt.report_csv = dir / "ncu_candidate.csv";
  NcuRun c = run_ncu(metrics_, targets->candidate, opt, timeout_);
  // The inputs' copy is as large as the task's inputs: an overnight run keeps none of them.
  std::error_code ec;
  fs::remove(dir / "profile_tensors.bin", ec);
  p.candidate = std::move(c.report);
  p.profiler_ms = c.wall_ms;
  if (!c.error.empty()) p.note = "ncu: " + c.error;
  if (p.candidate.kernels.size() >= static_cast<std::size_t>(kMaxLaunches))
    p.note = "ncu profiled only the first " + std::to_string(kMaxLaunches) + " kernel launches of the call";
  const std::string key = task.cache_key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = references_.find(key); it != references_.end()) {
      p.reference = it->second;
      return p;
    }
  }
  opt.report_csv = dir / "ncu_reference.csv";
  NcuRun r = run_ncu(metrics_, targets->reference, opt, timeout_);
  p.profiler_ms += r.wall_ms;
  if (r.error.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    references_[key] = r.report;
  }
  if (!r.error.empty())
    p.note += std::string(p.note.empty() ? "" : "; ") + "reference not profiled: " + r.error;
  p.reference = std::move(r.report);
  return p;
}

}  // namespace kforge::backends
