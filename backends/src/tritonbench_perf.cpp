// TritonBench's Speed Up through the judge's bench (tritonbench_perf.hpp; issue 22 §4).
#include "kforge/backends/tritonbench_perf.hpp"

#include <algorithm>
#include <random>
#include <regex>
#include <sstream>

#include "kforge/common/util.hpp"

namespace kforge::backends {

namespace {

/// performance_utils.py's Performance_Metrics as far as a perf script uses it (its constructor
/// and input_tensors), get_input_tensors() stopped once input _KF_INPUT exists (the larger ones
/// are never made), and the glue: kf_forward = call_op on the input with the caller's tensors.
/// The same text runs in the judge (over the reference) and in the confined host (over the
/// candidate); in the host its input is made once, at import, for its structure only.
constexpr const char* kHarnessHead = R"PY(


# ---- kforge: TritonBench's performance harness (tritonbench_perf.hpp), performance input _KF_INPUT ----
class _KfEnough(Exception):
    pass


class _KfInputs(list):
    def append(self, x):
        list.append(self, x)
        if len(self) > _KF_INPUT:
            raise _KfEnough()


class do_bench_config:
    def __init__(self, *args, **kwargs):
        pass


class Performance_Metrics:
    def __init__(self, op_name, dtype=None, is_backward=False, **kwargs):
        self.op_name, self.dtype, self.kwargs = op_name, dtype, kwargs
        self.input_tensors = []

    @property
    def input_tensors(self):
        return self._kf_inputs

    @input_tensors.setter
    def input_tensors(self, value):
        self._kf_inputs = _KfInputs() if type(value) is list and not value else value


)PY";

constexpr const char* kHarnessTail = R"PY(


def _kf_input():
    m = performance_metrics()
    try:
        m.get_input_tensors()
    except _KfEnough:
        pass
    ins = list(m.input_tensors)
    return m, (ins[_KF_INPUT] if _KF_INPUT < len(ins) else None)


def _kf_tensors(x, out):
    if isinstance(x, __import__("torch").Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _kf_tensors(v, out)
    return out


def _kf_rebuild(x, ts):
    if isinstance(x, __import__("torch").Tensor):
        return ts.pop(0)
    if isinstance(x, (tuple, list)):
        return type(x)(_kf_rebuild(v, ts) for v in x)
    return x


_kf_perf, _kf_shape = _kf_input()


def kf_forward(*tensors):
    return _kf_perf.call_op(_kf_rebuild(_kf_shape, list(tensors)))
)PY";

/// The judge's side: the KernelBench form over the harness.
constexpr const char* kReferenceTail = R"PY(


class Model(__import__("torch").nn.Module):
    def forward(self, *tensors):
        return kf_forward(*tensors) if _kf_shape is not None else tensors[0].clone()  # past the last input


def get_inputs():
    x = _kf_input()[1]
    return _kf_tensors(x, []) if x is not None else [__import__("torch").zeros(1)]


def get_init_inputs():
    return []


def _kf_formula(per_s):
    # The script's GB/s or TFLOPS at 1000 ms (its formulas divide by the runtime); -1 past the last input.
    if _kf_shape is None:
        return -1.0
    try:
        return float(per_s(_kf_shape, 1000.0))
    except Exception:
        return 0.0
)PY";

const std::regex kTaskImport(R"(^\s*from\s+(TritonBench_v1|TorchBench_v1)\.\w+\s+import\s+(.*)$)");

}  // namespace

std::string perf_script_body(const std::string& perf_script) {
  static const std::regex main_block(R"(^if\s+__name__\s*==)");
  static const std::regex utils_import(R"(^\s*from\s+performance_utils\s+import)");
  std::istringstream in(perf_script);
  std::string line, out;
  while (std::getline(in, line)) {
    if (std::regex_search(line, main_block)) break;
    if (line.find("sys.path.append(") != std::string::npos || std::regex_search(line, kTaskImport) ||
        std::regex_search(line, utils_import))
      continue;
    out += line + "\n";
  }
  return out;
}

std::vector<std::string> perf_script_imports(const std::string& perf_script) {
  std::vector<std::string> names;
  std::istringstream in(perf_script);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, m, kTaskImport)) continue;
    std::string list = m[2].str();
    list = list.substr(0, list.find('#'));
    list.erase(std::remove_if(list.begin(), list.end(), [](char c) { return c == '(' || c == ')'; }),
               list.end());
    std::istringstream items(list);
    std::string item;
    while (std::getline(items, item, ',')) {
      std::istringstream words(item);
      std::string name;
      if (words >> name) names.push_back(name);
    }
  }
  return names;
}

std::string perf_module(const std::string& source, const std::string& perf_script, int input,
                        bool reference) {
  std::string s = source;
  if (!s.empty() && s.back() != '\n') s += '\n';
  s += kHarnessHead;
  s += "_KF_INPUT = " + std::to_string(input) + "\n\n" + perf_script_body(perf_script) + kHarnessTail;
  if (reference) s += kReferenceTail;
  return s;
}

TaskRef perf_task(const TaskRef& task, int input) {
  TaskRef r = task;
  r.id = task.id + "#perf" + std::to_string(input);
  r.source = perf_module(task.source, task.perf_script, input, true);
  r.test_source.clear();
  r.test_function.clear();
  r.entries.clear();
  r.perf_script.clear();
  r.bytes_expr = "_kf_formula(_kf_perf.get_gbps) * 1e9";
  r.flops_expr = "_kf_formula(_kf_perf.get_tflops) * 1e12";
  r.module_mode = "eval";
  return r;
}

SumRatio tritonbench_speedup(const std::vector<PerfInputTiming>& inputs) {
  SumRatio r;
  double ref = 0, cand = 0;
  for (const auto& p : inputs) {
    ref += p.reference_ms;
    cand += p.candidate_ms;
  }
  if (inputs.empty() || !(cand > 0)) return r;
  r.speedup = ref / cand;
  std::mt19937_64 rng(12345);
  auto resampled_median = [&](const std::vector<double>& v, double fallback) {
    if (v.empty()) return fallback;
    std::vector<double> x(v.size());
    std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
    for (auto& e : x) e = v[pick(rng)];
    std::nth_element(x.begin(), x.begin() + static_cast<long>(x.size() / 2), x.end());
    return x[x.size() / 2];
  };
  std::vector<double> ratios;
  for (int i = 0; i < 2000; ++i) {
    double sr = 0, sc = 0;
    for (const auto& p : inputs) {
      sr += resampled_median(p.reference_samples, p.reference_ms);
      sc += resampled_median(p.candidate_samples, p.candidate_ms);
    }
    ratios.push_back(sr / std::max(1e-12, sc));
  }
  std::sort(ratios.begin(), ratios.end());
  r.ci_low = ratios[50];  // 2.5% and 97.5%
  r.ci_high = ratios[1949];
  return r;
}

namespace {

/// Whether the module text binds `name` at its top level (def, class, assignment, import as).
bool binds(const std::string& source, const std::string& name) {
  const std::regex r("(^|\\n)(def|class)\\s+" + name + "\\b|(^|\\n)" + name +
                     "\\s*(:[^=\\n]*)?=[^=]|import\\s+.*\\b" + name + "\\b");
  return std::regex_search(source, r);
}

}  // namespace

std::vector<int> chosen_inputs(int n, int k) {
  std::vector<int> v;
  if (n <= 0) return v;
  if (k <= 0 || k >= n) {
    for (int i = 0; i < n; ++i) v.push_back(i);
    return v;
  }
  for (int i = 0; i < k; ++i) {
    const int p = k == 1 ? n - 1 : static_cast<int>((static_cast<long>(i) * (n - 1) + (k - 1) / 2) / (k - 1));
    if (v.empty() || v.back() != p) v.push_back(p);
  }
  return v;
}

namespace {

BenchResult not_timed(const std::string& why) {
  BenchResult b;
  b.ok = true;
  b.flags.push_back("not timed: " + why);
  return b;
}

}  // namespace

BenchResult bench_tritonbench(RunnerClient& runner, const TaskRef& task, const std::string& candidate_source,
                              const std::filesystem::path& workdir, const BenchOptions& opt, int max_inputs) {
  if (task.perf_script.empty()) return not_timed("the task has no TritonBench performance script");
  for (const auto& name : perf_script_imports(task.perf_script))
    if (!binds(candidate_source, name))
      return not_timed("TritonBench's performance script calls `" + name +
                       "`, which the candidate does not define");
  std::filesystem::create_directories(workdir);
  // The inputs (loads are the judge's alone: cheap), then the chosen ones timed.
  std::vector<LoadResult> loads;
  for (int p = 0; p < max_inputs; ++p) {
    LoadResult lr = runner.load(perf_task(task, p));
    if (!lr.ok && p == 0)
      return not_timed("the reference's performance harness failed: " + lr.error.substr(0, 400));
    if (!lr.ok || lr.bytes < 0) break;  // past the last input (or one the reference fails on)
    loads.push_back(lr);
  }
  BenchResult total;
  total.ok = true;
  for (int p : chosen_inputs(static_cast<int>(loads.size()), opt.perf_inputs)) {
    const TaskRef t = perf_task(task, p);
    const auto artifact = workdir / ("perf" + std::to_string(p) + ".py");
    write_file(artifact, perf_module(candidate_source, task.perf_script, p, false));
    // A Python module, whatever the backend: the Python host.
    BenchResult b = runner.bench(t, artifact, opt, HostKind::python);
    if (!b.ok && b.outcome == Outcome::infra_error) return b;  // the judge's failure
    // As TritonBench, an input the candidate fails on is left out of its Speed Up (its verdict is
    // the test block's): PyTorch compute there (the script's call_op may do its own; a G task's gold
    // ops allowed in its check are not carried over), a crash, a wrong result on a verified batch,
    // an input it writes (in-place ops). Never credited, never charged.
    if (!b.ok) {
      total.flags.push_back("performance input " + std::to_string(p) +
                            " not timed: " + std::string(to_string(b.outcome)) +
                            (b.sub_kind.empty() ? "" : "/" + b.sub_kind) + ": " + b.message.substr(0, 300));
      continue;
    }
    total.perf_inputs.push_back(PerfInputTiming{p, b.candidate_ms, b.reference_ms, loads[p].bytes,
                                                loads[p].flops, b.candidate_samples, b.reference_samples});
    total.candidate_ms += b.candidate_ms;
    total.reference_ms += b.reference_ms;
    total.bench_ms += b.bench_ms;
    for (const auto& [k, v] : b.phases_ms) total.phases_ms[k] += v;  // the timed lock's wait included
    if (!b.timing_anomaly.empty() && total.timing_anomaly.empty())
      total.timing_anomaly = "performance input " + std::to_string(p) + ": " + b.timing_anomaly;
    total.sets = std::max(total.sets, b.sets);
  }
  if (total.perf_inputs.size() < loads.size())
    total.flags.push_back("timed " + std::to_string(total.perf_inputs.size()) + " of the script's " +
                          std::to_string(loads.size()) + " performance inputs");
  const SumRatio s = tritonbench_speedup(total.perf_inputs);
  total.speedup = s.speedup;
  total.speedup_ci_low = s.ci_low;
  total.speedup_ci_high = s.ci_high;
  return total;
}

}  // namespace kforge::backends
