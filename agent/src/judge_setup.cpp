#include "kforge/agent/judge_setup.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "kforge/backends/backend.hpp"
#include "kforge/backends/ncu.hpp"
#include "kforge/benchmarks/shapes.hpp"
#include "kforge/common/util.hpp"
#include "kforge/runs/attempt.hpp"

namespace kforge::agent {

namespace fs = std::filesystem;

backends::TaskRef task_ref(const Task& task, const std::string& profile) {
  backends::TaskRef r;
  r.id = task.id;
  r.file = task.file;
  auto src = apply_profile(task, profile);
  if (!src) throw std::invalid_argument("task " + task.id + " has no profile '" + profile + "'");
  r.source = *src;
  if (auto est = estimate_inputs(r.source); est.ok) r.input_bytes_estimate = est.bytes;
  for (const auto& [dtype, tol] : task.tolerances) r.tolerances[dtype] = {tol.atol, tol.rtol};
  r.flops_expr = task.flops;
  r.bytes_expr = task.bytes;
  r.module_mode = task.module_mode;
  r.allow_ops = task.allow_ops;
  if (task.format == TaskFormat::tritonbench_t || task.format == TaskFormat::tritonbench_g) {
    // TritonBench: the implementation and its test block
    r.source = task.source.substr(0, task.source.find(tritonbench_separator()));
    r.test_source = task.test_source;
    r.test_function = task.test_function;
    r.entries = task.entries;
    r.perf_script = task.perf_script;
  }
  return r;
}

std::optional<DevicePeaks> device_peaks(backends::RunnerClient& runner, const std::string& device_name) {
  // A cached entry measured by an older method (before kforge-peaks/2: one thread's at::mm on
  // the CPU, below what kernels reach) is measured again (backends/judge/runner.hpp).
  if (auto p = load_peaks(default_peaks_file(), device_name); p && starts_with(p->method, "kforge-peaks/2"))
    return p;
  auto m = runner.measure_peaks();
  if (!m) return std::nullopt;
  DevicePeaks p{device_name, m->dram_bytes_per_s, m->flops_per_s, iso8601_utc_now(), m->method};
  try {
    save_peaks(default_peaks_file(), p);
  } catch (const std::exception& e) {
    spdlog::warn("peaks measured but not cached: {}", e.what());
  }
  return p;
}

std::optional<backends::ScaledTask> scale_for_profile(const backends::TaskRef& task, double target_bytes) {
  auto sp = scale_to_bytes(task.source, target_bytes, "ncu");
  if (!sp || sp->factor <= 1) return std::nullopt;
  backends::ScaledTask s{task, ""};
  s.task.source = sp->source;
  s.task.input_bytes_estimate = sp->after.bytes;
  for (const auto& c : sp->changes) s.description += (s.description.empty() ? "" : ", ") + c;
  s.description += format_double(": %.0f MiB of inputs", sp->after.bytes / (1024.0 * 1024));
  return s;
}

std::unique_ptr<ProfileStep> make_profile_step(const std::string& requested, const std::string& backend,
                                               bool bench) {
  auto step = std::make_unique<ProfileStep>();
  if (!bench && requested == "auto") {
    step->profiler = "none";
    return step;
  }
  const backends::Backend* b = backends::find_backend(backend);
  const bool gpu = b && b->on_gpu();
  const auto ncu = gpu ? backends::find_ncu() : std::nullopt;
  auto resolved = backends::resolve_profiler(requested, ncu.has_value());
  if (!resolved) throw std::invalid_argument("--profiler: unknown profiler '" + requested + "'");
  step->profiler = *resolved;
  if (!gpu && step->profiler == "ncu") step->profiler = "basic";  // ncu profiles GPU kernels
  if (gpu && !ncu && step->profiler != "none") {
    step->profiler = "basic";
    step->note = "ncu not found (KFORGE_NCU, PATH, CUDA_HOME, /usr/local/cuda/bin): basic profile only";
  }
  if (step->profiler == "ncu") {
    // The reference's reports across runs beside the compile cache; the step's wall-clock
    // budget (KFORGE_NCU_BUDGET_S, default 120 s per attempt).
    backends::NcuProfilerOptions po;
    po.reference_cache = backends::NcuReferenceCache::default_dir();
    if (const char* s = std::getenv("KFORGE_NCU_BUDGET_S"); s && std::atof(s) > 0)
      po.budget = std::chrono::milliseconds(static_cast<int64_t>(std::atof(s) * 1000));
    po.scale = scale_for_profile;
    step->ncu = std::make_unique<backends::NcuProfiler>(*ncu, backends::load_ncu_metrics(), po);
  }
  return step;
}

}  // namespace kforge::agent
