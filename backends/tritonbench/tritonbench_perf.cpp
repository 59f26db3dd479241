// TritonBench's Speed Up through the judge's bench (tritonbench_perf.hpp; issue 22 §4).
#include "kforge/backends/tritonbench_perf.hpp"

#include <algorithm>
#include <random>
#include <regex>
#include <sstream>

#include "kforge/backends/python_traceback.hpp"
#include "kforge/common/dtype.hpp"
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


def _kf_shares(x, ys):
    if x.numel() == 0:
        return False
    p = x.untyped_storage().data_ptr()
    return any(y.numel() > 0 and y.untyped_storage().data_ptr() == p for y in ys)


def _kf_in_place(tensors, cloned, kept):
    # An operation that works in place (_KF_INPLACE, the judge's): the tensors at `cloned` are
    # cloned first, so call_op writes the clones, never the judge's inputs; the outputs are the
    # tensors call_op returned, then the clones at `kept` (written by the reference, not returned).
    ts = list(tensors)
    for i in cloned:
        ts[i] = ts[i].clone()
    r = _kf_perf.call_op(_kf_rebuild(_kf_shape, list(ts)))
    return tuple(_kf_tensors(r, []) + [ts[i] for i in kept])


def kf_forward(*tensors):
    if _KF_INPLACE is None:
        return _kf_perf.call_op(_kf_rebuild(_kf_shape, list(tensors)))
    if _KF_INPLACE in ("all", "nothing"):
        return _kf_in_place(tensors, range(len(tensors)), range(len(tensors)))
    return _kf_in_place(tensors, *_KF_INPLACE)
)PY";

/// The judge's side: the KernelBench form over the harness.
constexpr const char* kReferenceTail = R"PY(

# The judge's reference (python_reference.cpp): the gold's call is run twice with its unwritten
# memory poisoned differently, and a candidate is verified where the two agree.
__kforge_gold_agreement__ = True


def _kf_bits(t):
    return t.detach().contiguous().reshape(-1).view(__import__("torch").uint8)


def _kf_detect(tensors):
    # The judge's run of the reference (its first call, on the load's probe inputs), on clones:
    # the tensor leaves call_op writes (bits changed) or returns (storage shared). Cloned: both;
    # kept as outputs: those written and not returned. None: it writes none and returns tensors;
    # "nothing": it returns no tensor and writes none (nothing to verify: not timed).
    global _KF_INPLACE
    torch = __import__("torch")
    before = [t.clone() for t in tensors]
    ts = [t.clone() for t in tensors]
    got = _kf_tensors(_kf_perf.call_op(_kf_rebuild(_kf_shape, list(ts))), [])
    written = [i for i, (t, b) in enumerate(zip(ts, before)) if not torch.equal(_kf_bits(t), _kf_bits(b))]
    returned = [i for i, t in enumerate(ts) if any(_kf_shares(x, [t]) for x in got)]
    cloned = sorted(set(written) | set(returned))
    if not cloned:
        _KF_INPLACE = None if got else "nothing"
    else:
        kept = [i for i in written if i not in returned]
        _KF_INPLACE = (tuple(cloned), tuple(kept)) if max(cloned) < 52 else "all"


def _kf_inplace_code(which):
    # The detection's verdict for the judge (bench_tritonbench), one bit per leaf of the cloned
    # (which = 0) or kept (1) ones: 0 none (no clone), -1 all, -2 nothing.
    if _KF_INPLACE is None or _KF_INPLACE == "detect":
        return 0.0
    if _KF_INPLACE in ("all", "nothing"):
        return -1.0 if _KF_INPLACE == "all" else -2.0
    return float(sum(1 << i for i in _KF_INPLACE[which]))


class Model(__import__("torch").nn.Module):
    def forward(self, *tensors):
        if _kf_shape is None:
            return tensors[0].clone()  # past the last input
        if _KF_INPLACE == "detect":
            _kf_detect(tensors)
        return kf_forward(*tensors)


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

std::string InPlace::python() const {
  if (kind == Kind::none) return "None";
  if (kind == Kind::detect) return "\"detect\"";
  if (kind == Kind::all) return "\"all\"";
  if (kind == Kind::nothing) return "\"nothing\"";
  auto tuple = [](const std::vector<int>& v) {
    std::string s = "(";
    for (int i : v) s += std::to_string(i) + ", ";
    return s + ")";
  };
  return "(" + tuple(cloned) + ", " + tuple(kept) + ")";
}

InPlace InPlace::from_code(double cloned_code, double kept_code) {
  InPlace m;
  if (cloned_code == -2) {
    m.kind = Kind::nothing;
    return m;
  }
  if (cloned_code < 0 || cloned_code >= 0x1p52 || kept_code < 0 || kept_code >= 0x1p52) {
    m.kind = cloned_code == 0 ? Kind::none : Kind::all;
    return m;
  }
  if (!(cloned_code > 0)) return m;
  m.kind = Kind::leaves;
  const auto c = static_cast<uint64_t>(cloned_code), k = static_cast<uint64_t>(kept_code);
  for (int i = 0; i < 52; ++i) {
    if (c >> i & 1) m.cloned.push_back(i);
    if (k >> i & 1) m.kept.push_back(i);
  }
  return m;
}

std::string perf_module(const std::string& source, const std::string& perf_script, int input, bool reference,
                        const InPlace& in_place) {
  std::string s = source;
  if (!s.empty() && s.back() != '\n') s += '\n';
  s += kHarnessHead;
  s += "_KF_INPUT = " + std::to_string(input) + "\n_KF_INPLACE = " + in_place.python() + "\n\n" +
       perf_script_body(perf_script) + kHarnessTail;
  if (reference) s += kReferenceTail;
  return s;
}

TaskRef perf_task(const TaskRef& task, int input, const InPlace& in_place) {
  TaskRef r = task;
  r.id = task.id + "#perf" + std::to_string(input);
  r.source = perf_module(task.source, task.perf_script, input, true, in_place);
  r.test_source.clear();
  r.test_function.clear();
  r.entries.clear();
  r.perf_script.clear();
  r.bytes_expr = "_kf_formula(_kf_perf.get_gbps) * 1e9";
  r.flops_expr = "_kf_formula(_kf_perf.get_tflops) * 1e12";
  r.module_mode = "eval";
  return r;
}

TaskRef in_place_probe(const TaskRef& task) {
  TaskRef r = perf_task(task, 0, InPlace{InPlace::Kind::detect, {}, {}});
  r.id = task.id + "#perf0-in-place";
  r.bytes_expr = "_kf_inplace_code(0)";
  r.flops_expr = "_kf_inplace_code(1)";
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

/// The record's note for an operation timed in place: which leaves, and what the clones cost.
std::string in_place_note(const InPlace& in_place, const LoadResult& largest) {
  int64_t bytes = 0;
  std::string which;
  for (std::size_t i = 0; i < largest.inputs.size(); ++i) {
    const bool cloned = in_place.kind == InPlace::Kind::all ||
                        std::find(in_place.cloned.begin(), in_place.cloned.end(), static_cast<int>(i)) !=
                            in_place.cloned.end();
    if (!cloned) continue;
    int64_t n = dtype_bytes(largest.inputs[i].dtype);
    for (int64_t d : largest.inputs[i].shape) n *= d;
    bytes += n;
    which += (which.empty() ? "" : ", ") + std::to_string(i);
  }
  return "in place: call_op writes or returns its input tensor(s) " + which +
         " (found by the judge's run of the reference on input 0); on both sides each timed call clones "
         "them first (call_op writes the clones, never the judge's inputs), its outputs being what call_op "
         "returned and the clones it wrote without returning, so both times include copying " +
         std::to_string(bytes) + " bytes on the largest timed input";
}

/// Why performance input p's bench is left out of the Speed Up ("" when it counts): the
/// reference failing on it when the bench loads it again (on the GPU: a CUDA error of the gold's
/// own kernel that surfaced after its first load, as G/matmul_kernel's illegal memory access;
/// RunnerClient::bench retried it on a fresh worker), like one it failed on at its first load:
/// the task's fault, not the judge's. As TritonBench, an input the candidate fails on (its
/// verdict is the test block's): PyTorch compute there (the script's call_op may do its own; a
/// G task's gold ops allowed in its check are not carried over), a crash, a wrong result on a
/// verified batch, an input it writes that the reference does not (in_place); never credited,
/// never charged. A reading below one launch's floor: noise on an input too small to time from
/// the candidate's process (or work outside the clock).
std::string untimed(int p, const BenchResult& b) {
  const std::string input = "performance input " + std::to_string(p);
  if (!b.ok && b.outcome == Outcome::infra_error)
    return input + " not timed: the reference's performance harness failed on it: " +
           failure_headline(b.message).substr(0, 300);
  if (!b.ok)
    return input + " not timed: " + std::string(to_string(b.outcome)) +
           (b.sub_kind.empty() ? "" : "/" + b.sub_kind) + ": " + b.message.substr(0, 300);
  if (b.timing_anomaly_kind == "launch_floor")
    return input + " left out of the Speed Up (timing_anomaly): " + b.timing_anomaly;
  return "";
}

/// Adds performance input p's timing (its bench b, its load's bytes and FLOPs) to the total.
void fold_input(BenchResult& total, int p, const BenchResult& b, const LoadResult& load) {
  for (const auto& f : b.flags) total.flags.push_back("performance input " + std::to_string(p) + ": " + f);
  total.perf_inputs.push_back(PerfInputTiming{p, b.candidate_ms, b.reference_ms, load.bytes, load.flops,
                                              b.candidate_samples, b.reference_samples});
  total.candidate_ms += b.candidate_ms;
  total.reference_ms += b.reference_ms;
  total.bench_ms += b.bench_ms;
  for (const auto& [k, v] : b.phases_ms) total.phases_ms[k] += v;  // the timed lock's wait included
  if (!b.timing_anomaly.empty() && total.timing_anomaly.empty())
    total.timing_anomaly = "performance input " + std::to_string(p) + ": " + b.timing_anomaly;
  if (!b.timing_unstable.empty() && total.timing_unstable.empty())
    total.timing_unstable = "performance input " + std::to_string(p) + ": " + b.timing_unstable;
  total.sets = std::max(total.sets, b.sets);
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
  // Whether call_op works in place: the judge's run of the reference on input 0 (never the
  // candidate's word); both sides then clone the same tensor leaves inside the timed call.
  const Expected<LoadResult> probe = runner.load(in_place_probe(task));
  if (!probe)
    return not_timed("the reference's performance harness failed: " + probe.failure().message.substr(0, 400));
  const InPlace in_place = InPlace::from_code(probe->bytes, probe->flops);
  if (in_place.kind == InPlace::Kind::nothing)
    return not_timed(
        "call_op returns no tensor and writes none of its inputs on the judge's run of the "
        "reference: nothing a candidate's call could be verified on");
  // The inputs (loads are the judge's alone: cheap), then the chosen ones timed.
  std::vector<LoadResult> loads;
  for (int p = 0; p < max_inputs; ++p) {
    Expected<LoadResult> lr = runner.load(perf_task(task, p, in_place));
    if (!lr && p == 0)
      return not_timed("the reference's performance harness failed: " + lr.failure().message.substr(0, 400));
    if (!lr || lr->bytes < 0) break;  // past the last input (or one the reference fails on)
    loads.push_back(lr.value());
  }
  BenchResult total;
  total.ok = true;
  const std::vector<int> chosen = chosen_inputs(static_cast<int>(loads.size()), opt.perf_inputs);
  if (in_place.kind != InPlace::Kind::none && !chosen.empty())
    total.flags.push_back(in_place_note(in_place, loads[chosen.back()]));
  for (int p : chosen) {
    const TaskRef t = perf_task(task, p, in_place);
    const auto artifact = workdir / ("perf" + std::to_string(p) + ".py");
    write_file(artifact, perf_module(candidate_source, task.perf_script, p, false, in_place));
    // A Python module, whatever the backend: the Python host.
    BenchResult b = runner.bench(t, artifact, opt, HostKind::python);
    if (!b.ok && b.outcome == Outcome::infra_error && !reference_unusable(b.failure))
      return b;  // the judge's failure, not the task's
    if (std::string why = untimed(p, b); !why.empty()) {
      total.flags.push_back(why);
      continue;
    }
    fold_input(total, p, b, loads[static_cast<std::size_t>(p)]);
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
