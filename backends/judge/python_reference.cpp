// The reference side of kforge-runner: executes the task's Python source in the embedded
// interpreter and hands tensors to C++ as zero-copy views.
#include <stdexcept>

#include "exchange.hpp"
#include "runner.hpp"

namespace kforge::runner {

namespace {

// Support code executed once in the interpreter. Everything the reference does runs here;
// C++ only sees tensors. Inputs are made with the task's own get_inputs() under a seed,
// directly on the device where torch supports `with torch.device(...)` (torch >= 2.0),
// else on the host and moved.
constexpr const char* kSupport = R"PY(
import contextlib, inspect, json, torch

class Unjudgeable(RuntimeError):
    """The reference ran but cannot judge a kernel (its own runs disagree): the runner replies
    with the typed error JudgeError::unjudgeable, the message for people."""

class Support:
    def __init__(self):
        self.ns = None
        self.model = None
        self.compiled = None
        self.dev = None
        self.mode = 'eval'
        self.masks = []
        self.testblock = ''

    def _ctx(self):
        if self.dev.type != 'cpu' and hasattr(torch.device, '__enter__'):
            return self.dev
        return contextlib.nullcontext()

    def load(self, task_id, path, source, device, model_seed, module_mode='', testblock=''):
        torch.set_grad_enabled(False)
        self.testblock = testblock
        self.masks = []
        self.dev = torch.device(device)
        ns = {'__name__': 'kforge_task', '__file__': path}
        exec(compile(source, path, 'exec'), ns)
        for name in ('Model', 'get_inputs', 'get_init_inputs'):
            if name not in ns:
                raise AttributeError('task %s defines no %s' % (task_id, name))
        self.ns = ns
        torch.manual_seed(model_seed)
        with self._ctx():
            init = ns['get_init_inputs']()
            model = ns['Model'](*init)
        # The suite's module mode (docs/suites.md): 'train' is nn.Module's default, as KernelBench's
        # and MultiKernelBench's harnesses run the Model (BatchNorm batch statistics, Dropout
        # live); 'eval' calls .eval(). The request's field wins; else the line the client
        # appends to the source; else eval.
        mode = module_mode or ns.get('__kforge_module_mode__', 'eval')
        if mode not in ('train', 'eval'):
            raise ValueError('module_mode must be train or eval, got %r' % (mode,))
        self.mode = mode
        self.init = init
        self.model = model.to(self.dev).train(mode == 'train')
        self.compiled = None
        self._check_deterministic(task_id)

    def _check_deterministic(self, task_id):
        """A reference whose output is random in its module mode (Dropout with p > 0 in train
        mode, torch.rand in forward) cannot judge a kernel: two runs on the same inputs must
        agree. The tolerance (1e-3 relative, 1e-3 of the output's rms absolute) is far above
        the run-to-run noise of nondeterministic GPU reductions (atomics) and far below what a
        random op changes (Dropout zeroes elements and scales the rest)."""
        xs = self.make_inputs(20240917)
        if self.ns.get('__kforge_gold_agreement__'):
            return self._gold_agreement(task_id, xs)
        a = self.run(xs)
        b = self.run(xs)
        for i, (x, y) in enumerate(zip(a, b)):
            if x.shape != y.shape or x.dtype != y.dtype:
                same = False
            elif x.is_floating_point():
                fin = x[torch.isfinite(x)].double()
                rms = float(fin.pow(2).mean().sqrt()) if fin.numel() else 0.0
                same = bool(torch.allclose(x, y, rtol=1e-3, atol=1e-3 * rms + 1e-30, equal_nan=True))
            else:
                same = bool(torch.equal(x, y))
            if not same:
                raise Unjudgeable(
                    'unjudgeable: task %s: output %d of the reference differs between two runs on the '
                    'same inputs in %s mode (random operations such as Dropout with p > 0 are live in '
                    'this mode), so no kernel can be checked against it' % (task_id, i, self.mode))

    def _gold_agreement(self, task_id, xs):
        """A TritonBench gold's performance call (tritonbench_perf.cpp marks its module): as its
        test block (testblock.py gold_agreement), two runs on the same inputs, each filling the
        memory it allocates without writing (torch.empty) with its own poison. The elements on
        which they agree are the ones the gold determines: self.masks holds, per output, None
        (all of them) or the bool tensor of them, and the bench verifies a candidate there only.
        An output of which the gold determines nothing cannot be verified: unjudgeable."""
        import importlib.util
        spec = importlib.util.spec_from_file_location('kforge_testblock', self.testblock)
        tb = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tb)
        runs = []
        for poison in (0, 1):
            with tb.poisoned_allocations(poison, torch):
                runs.append(self.run(xs))
        for i, (x, y) in enumerate(zip(*runs)):
            agree = tb.agreeing(x, y, torch) if x.shape == y.shape and x.dtype == y.dtype else None
            if agree is None or not bool(agree.any()):
                raise Unjudgeable(
                    'unjudgeable: task %s: the gold determines no element of output %d (its two runs, '
                    'each with its unwritten memory poisoned differently, agree nowhere), so no '
                    'kernel can be verified against it' % (task_id, i))
            self.masks.append(None if bool(agree.all()) else agree.reshape(x.shape).contiguous())

    def triton_do_bench(self, inputs):
        """The reference timed by triton.testing.do_bench (median, ms), for timing fidelity."""
        import triton.testing
        return float(triton.testing.do_bench(lambda: self.model(*inputs), warmup=25, rep=200,
                                             return_mode='median'))

    def formula(self, expr):
        """Evaluates a suite's FLOP or byte formula over the module's constants (0 if none)."""
        if not expr:
            return 0.0
        return float(eval(expr, dict(self.ns)))

    def count_flops(self, inputs):
        """FLOPs of one reference call by PyTorch's FLOP counter (torch.utils.flop_counter: matrix
        products, convolutions, attention; elementwise work counts 0): an estimate, for tasks
        whose suite declares no formula. 0.0 when the counter cannot run the module."""
        try:
            from torch.utils.flop_counter import FlopCounterMode
            with FlopCounterMode(display=False) as m:
                self.run(inputs)
            return float(m.get_total_flops())
        except Exception:
            return 0.0

    def _as_tensor(self, x, i):
        if isinstance(x, torch.Tensor):
            return x.to(self.dev).contiguous()
        if isinstance(x, bool) or isinstance(x, int):
            return torch.tensor(int(x), dtype=torch.int64)
        if isinstance(x, float):
            return torch.tensor(x, dtype=torch.float64)
        raise TypeError('get_inputs()[%d] is a %s; only tensors and numbers are supported'
                        % (i, type(x).__name__))

    def make_inputs(self, seed):
        torch.manual_seed(seed)
        with self._ctx():
            xs = self.ns['get_inputs']()
        return [self._as_tensor(x, i) for i, x in enumerate(xs)]

    def parameters(self):
        ps = [p.detach().contiguous() for _, p in self.model.named_parameters()]
        bs = [b.detach().contiguous() for _, b in self.model.named_buffers()]
        return ps + bs

    def init_json(self):
        try:
            return json.dumps(list(self.init))
        except (TypeError, ValueError):
            return 'null'

    def names(self, n_inputs):
        try:
            params = list(inspect.signature(self.model.forward).parameters.values())
            names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        names = (names + ['input%d' % i for i in range(len(names), n_inputs)])[:n_inputs]
        kinds = ['input'] * n_inputs
        for n, _ in self.model.named_parameters():
            names.append(n); kinds.append('parameter')
        for n, _ in self.model.named_buffers():
            names.append(n); kinds.append('buffer')
        return names, kinds

    def run(self, inputs, compiled=False):
        fn = self.model
        if compiled:
            if self.compiled is None:
                self.compiled = torch.compile(self.model)
            fn = self.compiled
        if self.mode == 'train':
            # Training mode updates buffers (BatchNorm running statistics) on every call; they
            # are inputs of the kernel and never affect a training-mode output, so the judge
            # keeps them as built: snapshot and restore around the call.
            bufs = [b for b in self.model.buffers()]
            saved = [b.clone() for b in bufs]
            y = fn(*inputs)
            for b, s in zip(bufs, saved):
                b.copy_(s)
        else:
            y = fn(*inputs)
        if isinstance(y, torch.Tensor):
            return [y]
        if isinstance(y, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in y):
            return list(y)
        raise TypeError('Model.forward returned %s; expected a tensor or a tuple of tensors'
                        % type(y).__name__)

    def run_float64(self, inputs):
        import copy
        try:
            model = copy.deepcopy(self.model).double()
            xs = [x.double() if x.is_floating_point() else x for x in inputs]
            y = model(*xs)
        except Exception:
            return []
        ys = [y] if isinstance(y, torch.Tensor) else list(y)
        return [t if t.dtype == torch.float64 else t.double() for t in ys]

support = Support()
)PY";

}  // namespace

void Reference::load(const std::string& task_id, const std::string& file, const std::string& source,
                     const std::string& device, int64_t model_seed, const std::string& module_mode,
                     const std::string& testblock_py) {
  if (!support_) {
    py::dict scope;
    scope["__builtins__"] = py::module_::import("builtins");
    py::exec(kSupport, scope);
    support_ = scope["support"];
    unjudgeable_ = scope["Unjudgeable"];
  }
  loaded_ = false;
  try {
    support_.attr("load")(task_id, file, source, device, model_seed, module_mode, testblock_py);
  } catch (py::error_already_set& e) {
    if (e.matches(unjudgeable_)) throw UnjudgeableReference(py::str(e.value()).cast<std::string>());
    throw;
  }
  device_ = device;
  loaded_ = true;
}

static std::vector<HeldTensor> hold_all(const py::object& list) {
  std::vector<HeldTensor> out;
  for (auto item : list) out.push_back(hold(item));
  return out;
}

std::vector<HeldTensor> Reference::masks() {
  std::vector<HeldTensor> out;
  for (auto m : py::list(support_.attr("masks"))) out.push_back(m.is_none() ? HeldTensor{} : hold(m));
  return out;
}

std::vector<HeldTensor> Reference::make_inputs(int64_t seed) {
  return hold_all(support_.attr("make_inputs")(seed));
}

double Reference::triton_do_bench(const std::vector<HeldTensor>& inputs) {
  py::list args;
  for (const auto& h : inputs) args.append(h.owner);
  return support_.attr("triton_do_bench")(args).cast<double>();
}

double Reference::formula(const std::string& expr) {
  return support_.attr("formula")(expr).cast<double>();
}

double Reference::count_flops(const std::vector<HeldTensor>& inputs) {
  py::list args;
  for (const auto& h : inputs) args.append(h.owner);
  return support_.attr("count_flops")(args).cast<double>();
}

std::vector<HeldTensor> Reference::parameters() {
  return hold_all(support_.attr("parameters")());
}

std::vector<HeldTensor> Reference::run(const std::vector<HeldTensor>& inputs, bool compiled) {
  py::list args;
  for (const auto& h : inputs) args.append(h.owner);
  return hold_all(support_.attr("run")(args, compiled));
}

std::vector<HeldTensor> Reference::run_float64(const std::vector<HeldTensor>& inputs) {
  py::list args;
  for (const auto& h : inputs) args.append(h.owner);
  return hold_all(support_.attr("run_float64")(args));
}

std::string Reference::init_inputs_json() {
  return support_.attr("init_json")().cast<std::string>();
}

std::string Reference::module_mode() {
  return support_.attr("mode").cast<std::string>();
}

std::vector<TensorSpec> Reference::input_specs(const std::vector<HeldTensor>& inputs,
                                               const std::vector<HeldTensor>& params) {
  auto nk = support_.attr("names")(inputs.size())
                .cast<std::pair<std::vector<std::string>, std::vector<std::string>>>();
  std::vector<TensorSpec> out;
  for (std::size_t i = 0; i < inputs.size() + params.size(); ++i) {
    const at::Tensor& t = i < inputs.size() ? inputs[i].t : params[i - inputs.size()].t;
    out.push_back({nk.first.at(i), nk.second.at(i), t.sizes().vec(), dtype_name(t.scalar_type())});
  }
  return out;
}

HeldTensor hold(py::handle obj) {
  HeldTensor h;
  h.owner = py::reinterpret_borrow<py::object>(obj);
  auto ptr = obj.attr("data_ptr")().cast<std::uintptr_t>();
  auto sizes = obj.attr("shape").cast<std::vector<int64_t>>();
  auto strides = obj.attr("stride")().cast<std::vector<int64_t>>();
  std::string dt = py::str(obj.attr("dtype")).cast<std::string>();  // "torch.float32"
  if (dt.rfind("torch.", 0) == 0) dt = dt.substr(6);
  std::string dev = py::str(obj.attr("device")).cast<std::string>();
  auto opts = at::TensorOptions().dtype(scalar_type_of(dt)).device(at::Device(dev));
  // An empty tensor may have no storage (data_ptr 0), which from_blob refuses on a GPU ("resides
  // on host memory"): it holds nothing to share, so it gets an empty tensor of its own.
  if (ptr == 0) {
    h.t = at::empty_strided(sizes, strides, opts);
    return h;
  }
  h.t = at::from_blob(reinterpret_cast<void*>(ptr), sizes, strides, opts);
  return h;
}

void release_cached_memory() {
  auto torch = py::module_::import("torch");
  if (torch.attr("cuda").attr("is_available")().cast<bool>()) torch.attr("cuda").attr("empty_cache")();
}

}  // namespace kforge::runner
