"""TritonBench's test blocks, run the same way on both sides of the trust boundary: in the judge
(kforge-runner's interpreter) over the task's reference, and in the confined Triton host over
the candidate (backends/triton/host.py). Nothing here imports the candidate.

A TritonBench file is an implementation, a separator line of 146 '#', then a test block that
builds its inputs, calls the implementation's functions and leaves its results in a top-level
`test_results` (T) or `result_gold` (G), or returns them from its `test_*` function. kforge
compares those results leaf by leaf under several seeds, not printed strings (TritonBench's own
Exec metric compares stdout, which its gold files never write: its issue #7).

Shapes: run() returns a flat list; a leaf is a torch.Tensor or a JSON value (number, bool,
string, None; anything else becomes its repr()).
"""

import json
import re

RESULT_NAMES = ("test_results", "result_gold")
_CUDA_LITERAL = re.compile(r"""(['"])cuda(:\d+)?\1""")


def for_device(source, device):
    """On the CPU (Triton's interpreter) the blocks' device literals 'cuda' / 'cuda:0' become
    'cpu'; the judge and the host apply the same rewrite, so both run the same program."""
    return source if device != "cpu" else _CUDA_LITERAL.sub(lambda m: m.group(1) + "cpu" + m.group(1), source)


def _compiled(source, name):
    """Compiled under a name that linecache knows, so that inspect.getsource works on what it
    defines: @triton.jit reads its function's source (a TritonBench-G reference is Triton)."""
    import hashlib
    import linecache
    filename = "<%s-%s>" % (name, hashlib.sha256(source.encode()).hexdigest()[:12])
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec")


def flatten(value, torch, out=None):
    """Leaves of nested dicts (in insertion order), lists and tuples; a numpy array as a tensor."""
    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        out.append(value.detach())
    elif isinstance(value, dict):
        for v in value.values():
            flatten(v, torch, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            flatten(v, torch, out)
    elif value is None or isinstance(value, (bool, int, float, str)):
        out.append(value)
    elif type(value).__module__ == "numpy" and type(value).__name__ == "ndarray" and value.dtype.kind in "biufc":
        # A block's `out.cpu().numpy()`: compared as the tensor it holds, with the tolerances
        # (its repr prints 8 digits and, above 1000 elements, only the corners).
        out.append(torch.as_tensor(value.copy()))
    elif type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
        out.append(value.item())  # a numpy scalar (np.float32(...), arr.sum())
    else:
        out.append(repr(value))
    return out


def run(namespace, test_source, test_function, seed, device, torch, code=None, fresh=False):
    """Executes the test block in `namespace` (which holds the implementation) under
    torch.manual_seed(seed) and returns its results' leaves. `code`: the block already compiled
    (the candidate's host runs the code object its native recorder counts by). `fresh`: the
    block's floating literal tensors get fresh values drawn from `seed` (fresh_literals)."""
    torch.manual_seed(seed)
    code = code if code is not None else _compiled(for_device(test_source, device), "kforge-test-block")
    if fresh:
        with fresh_literals(seed, torch):
            return _run(namespace, code, test_function, torch)
    return _run(namespace, code, test_function, torch)


def _run(namespace, code, test_function, torch):
    exec(code, namespace)
    for name in RESULT_NAMES:
        if name in namespace:
            return flatten(namespace[name], torch)
    fn = namespace.get(test_function)
    if not callable(fn):
        raise RuntimeError("the test block leaves no test_results / result_gold and defines no %s()" % test_function)
    return flatten(fn(), torch)


# --- fresh literal inputs (issue 38 §2.5) -----------------------------------------------------
# Most TritonBench-T blocks build their inputs from literals (torch.tensor([[1.0, -2.0], ...])):
# the same values under every seed, so a candidate keyed by the inputs' shapes could return
# stored answers. Under `fresh`, each floating tensor the block's own code creates from a
# literal gets values of its own: the same shape and dtype, drawn uniformly from the literal's
# own range [min, max] (a constant c from [c/2, 3c/2]: signs, zeros and domains such as [0, 1]
# or x > 0 are kept), from Python's random seeded by (seed, the literal's position), so that the
# judge and the host draw the same values. Integer and bool literals (indices, lengths, masks)
# are kept. A literal created inside the implementation (a gold's or a candidate's constant
# table) is not the block's: kept.
_BLOCK_FILES = ("<kforge-test-block",)


def _created_by_block(torch):
    """Whether the innermost frame outside torch and this module runs the test block's code."""
    import os
    import sys
    skip = (os.path.dirname(os.path.abspath(torch.__file__)), os.path.abspath(__file__))
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(skip):
        f = f.f_back
    return f is not None and f.f_code.co_filename.startswith(_BLOCK_FILES)


def _fresh_values(t, rng, torch):
    """Values for floating literal tensor `t` (on the CPU, t's dtype and shape), or None to keep
    it (non-finite values, complex)."""
    import math
    values = t.detach().to("cpu", torch.float64).reshape(-1).tolist()
    if not values or not all(math.isfinite(v) for v in values):
        return None
    lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = sorted((0.5 * lo, 1.5 * lo))
    fresh = [rng.uniform(lo, hi) for _ in values]
    return torch.tensor(fresh, dtype=torch.float64).to(t.dtype).reshape(t.shape)


def fresh_literals(seed, torch):
    """The dispatch mode of `fresh` runs (above): rewrites, in place, each floating tensor that
    aten.lift_fresh makes (torch.tensor, as_tensor, Tensor(...) of Python data) for the block."""
    import random

    from torch.utils._python_dispatch import TorchDispatchMode
    count = [0]

    class Fresh(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ in ("lift_fresh", "lift_fresh_copy") and isinstance(out, torch.Tensor) \
                    and out.is_floating_point() and out.numel() and _created_by_block(torch):
                count[0] += 1
                values = _fresh_values(out, random.Random(seed * 1000003 + count[0]), torch)
                if values is not None:
                    with torch.no_grad():
                        out.copy_(values)
            return out

    return Fresh()


# --- Triton launches (issue 38 §2.4) ----------------------------------------------------------
class Launches:
    """While installed (`with`): Triton kernel launches counted (JITFunction.run, and under
    TRITON_INTERPRET=1 InterpretedFunction.run; not warm-ups, only runs that returned), and the
    namespace's entry points `entries` wrapped so that each top-level call records whether it
    launched one. `launchless`: the entries with a call that returned without a launch;
    `called`: the entries called (a call whose tensor arguments are all empty is neither:
    _no_elements). Only plain functions are wrapped (a class or a Triton kernel
    keeps its identity: testblock's _plain_function); with `strict` (the candidate's side,
    where every entry named must launch), any other callable too, and an entry that cannot be
    wrapped (a class, a Triton object) is launchless when the whole block launched nothing.
    Names and classes are restored on exit. A count kept in this process: on the candidate's
    side it is the host's word, a floor against candidates with no kernel at all, never the
    proof of a verdict (the judge's comparison is)."""

    def __init__(self, namespace, entries, strict=False):
        self.namespace, self.strict = namespace, strict
        self.entries = [e for e in entries if self._wrappable(namespace.get(e))]
        self.unwrapped = [e for e in entries if e in namespace and e not in self.entries] if strict else []
        self.count, self.depth = 0, 0
        self.launchless, self.called = set(), set()
        self._saved_classes, self._saved_names = [], {}

    def _wrappable(self, v):
        if _plain_function(v):
            return True
        return self.strict and callable(v) and not isinstance(v, type) \
            and not type(v).__module__.startswith("triton.")

    @staticmethod
    def classes():
        """Triton's launching classes (imported here: the host calls this before the candidate's
        module runs, so that no import is left for after the seal)."""
        found = []
        try:
            from triton.runtime.jit import JITFunction
            found.append(JITFunction)
        except ImportError:
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction
            found.append(InterpretedFunction)
        except ImportError:
            pass
        return found

    def __enter__(self):
        for cls in self.classes():
            original = cls.__dict__.get("run")
            if original is None:
                continue
            self._saved_classes.append((cls, original))
            cls.run = self._counted_run(original)
        for name in self.entries:
            self._saved_names[name] = self.namespace[name]
            self.namespace[name] = self._wrapped(name, self.namespace[name])
        return self

    def __exit__(self, *exc):
        for cls, original in self._saved_classes:
            cls.run = original
        for name, fn in self._saved_names.items():
            self.namespace[name] = fn
        if self.count == 0:
            self.launchless.update(self.unwrapped)
        return False

    def _counted_run(self, original):
        launches = self

        def run(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            if not kwargs.get("warmup", False):
                launches.count += 1
            return out
        return run

    def _wrapped(self, name, fn):
        launches = self

        def call(*args, **kwargs):
            top = launches.depth == 0
            before = launches.count
            launches.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                launches.depth -= 1
            if top and not _no_elements(args, kwargs):
                launches.called.add(name)
                if launches.count == before:
                    launches.launchless.add(name)
            return out
        return call


def _no_elements(args, kwargs):
    """Whether a call's tensor arguments (in lists and tuples too) are all empty, and there is
    one: such a call has nothing to launch a kernel on (T/tanh's test passes torch.tensor([]))."""
    import torch
    tensors = []

    def walk(v):
        if isinstance(v, torch.Tensor):
            tensors.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
    walk(list(args) + list(kwargs.values()))
    return bool(tensors) and all(t.numel() == 0 for t in tensors)


# --- entry points stubbed (issue 38 §2.4) -----------------------------------------------------
STUB_SENTINEL = "kforge-stubbed-entry-point"


class _Stub:
    """An entry point that does nothing: returns None (or raises STUB_SENTINEL), whatever is
    called, subscripted or looked up on it (Cls.apply(...), kernel[grid](...))."""

    def __init__(self, raising):
        self._raising = raising

    def __call__(self, *args, **kwargs):
        if self._raising:
            raise RuntimeError(STUB_SENTINEL)
        return None

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self


def _stub_matches(gold, stubbed, torch):
    """Whether a stubbed run's leaves give the gold's results: equal leaves, tensors agreeing
    on every element; a string holding the stub's sentinel is text the candidate chooses (it
    can raise with the gold's own error text): it matches every string of its form (f"failed:
    {e}" matches the gold's "failed: ...", not its "passed")."""
    if len(gold) != len(stubbed):
        return False
    for g, s in zip(gold, stubbed):
        if isinstance(g, torch.Tensor) or isinstance(s, torch.Tensor):
            if not (isinstance(g, torch.Tensor) and isinstance(s, torch.Tensor)) or g.shape != s.shape \
                    or g.dtype != s.dtype or not bool(agreeing(g, s.to(g.device), torch).all()):
                return False
        elif isinstance(g, str) and isinstance(s, str) and STUB_SENTINEL in s:
            head, _, tail = s.partition(STUB_SENTINEL)
            if not (len(g) >= len(head) + len(tail) and g.startswith(head) and g.endswith(tail)):
                return False
        elif not _same_value(g, s):
            return False
    return True


def stub_verdict(source, test_source, test_function, seed, device, entries, gold):
    """Why the task's test block cannot tell a candidate from no work ("" when it can): its
    results under `seed` with every entry point stubbed (_Stub: returning None; raising) equal
    the gold's leaves `gold` from the same seed (_stub_matches). A stubbed block that raises, or
    whose results differ, can tell."""
    import torch
    for raising, what in ((False, "return None"), (True, "raise")):
        namespace = {"__name__": "kf_reference"}
        exec(_compiled(for_device(source, device), "kforge-reference"), namespace)
        for name in entries:
            namespace[name] = _Stub(raising)
        try:
            with torch.enable_grad(), poisoned_allocations(0, torch):
                leaves = run(namespace, test_source, test_function, seed, device, torch)
        except Exception:  # noqa: BLE001 - the block notices: judgeable
            continue
        if _stub_matches(gold, leaves, torch):
            return ("the test block's results are the gold's when its entry points %s (%s): it cannot tell "
                    "a candidate that does nothing from one that works" % (what, ", ".join(entries)))
    return ""


def split(leaves, torch, device=None):
    """(the tensor leaves, contiguous, in order, on `device` when given; the other leaves as JSON
    [[position, value], ...]). Both sides move their results to the task's device, as
    TritonBench's own comparison moves both to one device (the CPU): a block whose gold returns
    a CPU tensor compares the same values on either side (issue 22 §2)."""
    tensors = [(v if device is None else v.to(device)).contiguous() for v in leaves if isinstance(v, torch.Tensor)]
    others = [[i, _json_safe(v)] for i, v in enumerate(leaves) if not isinstance(v, torch.Tensor)]
    return tensors, json.dumps(others, allow_nan=False)


def _json_safe(v):
    """A leaf as strict JSON: a non-finite float becomes the string "nan", "inf" or "-inf" (JSON
    has no such numbers, and the judge's parser refuses them), the same on both sides."""
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return v


def _plain_function(v):
    """Whether an entry point can be wrapped: a Python function. A class (a torch.autograd.Function
    called through .apply, a base class of super()), a Triton kernel (subscripted with its grid,
    referenced by other kernels) or any other callable object is left as it is: its PyTorch ops
    then count at the block's line that calls it, on both sides, which allows a candidate no more."""
    import types
    return isinstance(v, types.FunctionType)


def defines_triton_kernels(namespace):
    """Whether the implementation defines Triton kernels (@triton.jit, autotune, heuristics):
    TritonBench-G's references do, TritonBench-T's (PyTorch) do not."""
    return any(type(v).__module__.startswith("triton.") for v in namespace.values())


def record_ops(namespace, entries, ops):
    """Wraps the namespace's entry functions so that the name of every ATen op they dispatch is
    added to the set `ops`."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.add(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    def recorded(fn):
        def call(*args, **kwargs):
            with Recorder():
                return fn(*args, **kwargs)
        return call

    for name in entries:
        if _plain_function(namespace.get(name)):
            namespace[name] = recorded(namespace[name])


def _paused(fn, pause):
    """fn, with the judge's op counts paused while it runs (the reference's own entry points)."""
    def call(*args, **kwargs):
        pause(True)
        try:
            return fn(*args, **kwargs)
        finally:
            pause(False)
    return call


# Memory a block allocates without initialising it (torch.empty and its kin): filled with a
# different value in each of the gold's two runs (gold_agreement), so that an element the gold
# never writes differs between them on any device, whatever the allocator hands out.
_EMPTY_OPS = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted")


def _poison_value(dtype, run, torch):
    """Run 0: NaN (floats, complex), 0 (integers), True; run 1: 1234.5, 1, False. Integers stay
    small: a block that reads unwritten integers as indices (G/context_attn_llama's
    torch.empty req_to_token_indexs) reads in bounds, and its results differ between the runs
    instead of faulting. The finite float keeps arithmetic on unwritten memory finite, so that it
    differs from run 0's NaN rather than meeting it as inf - inf = NaN."""
    if dtype == torch.bool:
        return run == 0
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan") if run == 0 else 1234.5
    return 0 if run == 0 else 1


# Factories of fresh memory that the block's reads may run past (the block's inputs: torch.rand
# and kin, copies): their storage is padded with the run's poison (poisoned_allocations).
_FRESH_OPS = _EMPTY_OPS + (
    "rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "normal", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "clone", "_to_copy")

# The poisoned tail added past each fresh tensor's storage: as many elements as it has, at least
# 256, at most 16 Mi.
_PAD_MIN, _PAD_MAX = 256, 1 << 24


def _pad_storage(out, value, keep, torch):
    """Moves fresh tensor `out` onto a storage of its own elements followed by a tail filled with
    `value`, in place (Tensor.set_: the same tensor object, offset and strides), its elements
    copied over when `keep`. Reads past the end of `out` (a kernel without a mask: TritonBench-G's
    decay_cumsum strides past its tensors) then read this run's poison on every device, not
    whatever the allocator put next to it, which two runs in one process share and the
    candidate's host does not."""
    size = out.element_size()
    n = (out.untyped_storage().nbytes() + size - 1) // size
    pad = min(max(n, _PAD_MIN), _PAD_MAX)
    big = torch.empty(n + pad, dtype=out.dtype, device=out.device)
    big[n:].fill_(value)
    if keep:
        big[:n].copy_(out.new_empty(0).set_(out.untyped_storage(), 0, (n,), (1,)))
    out.set_(big.untyped_storage(), out.storage_offset(), out.size(), out.stride())


def poisoned_allocations(run, torch):
    """A dispatch mode under which every uninitialised allocation (_EMPTY_OPS) comes back filled
    with run `run`'s poison (_poison_value), and every fresh tensor of _FRESH_OPS with that poison
    past its end (_pad_storage). A mode, not the allocator: it sees torch.empty on the CPU (where
    large blocks are fresh zeroed pages) as on CUDA (where the caching allocator hands back a
    freed block, whatever it held). The fills run inside the op's dispatch, so neither the
    judge's op recorder nor record_ops counts them."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Poison(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name in _FRESH_OPS and isinstance(out, torch.Tensor) and out.layout == torch.strided \
                    and out.numel() and not out._is_view():
                value = _poison_value(out.dtype, run, torch)
                # Each on its own: a tensor that cannot move storage is still poisoned.
                try:
                    _pad_storage(out, value, name not in _EMPTY_OPS, torch)
                except (RuntimeError, TypeError):  # a dtype without such a value (float8, quantized)
                    pass
                if name in _EMPTY_OPS:
                    try:
                        out.fill_(value)
                    except (RuntimeError, TypeError):
                        pass
            return out

    return Poison()


def agreeing(x, y, torch):
    """The elements on which two runs' tensors agree: equal (NaN with NaN), or, for floating
    values, within the run-to-run noise that python_reference.cpp's _check_deterministic allows
    a reduction with atomics (1e-3 relative, 1e-3 of the first run's rms absolute; at least four
    ulps of a half-precision dtype)."""
    if x.is_complex():
        return agreeing(torch.view_as_real(x), torch.view_as_real(y), torch).all(-1)
    if not x.is_floating_point():
        return x == y
    a, b = x.double(), y.double()
    finite = a[torch.isfinite(a)]
    rms = float(finite.pow(2).mean().sqrt()) if finite.numel() else 0.0
    rtol = max(1e-3, 4 * torch.finfo(x.dtype).eps)
    return (a == b) | (torch.isnan(a) & torch.isnan(b)) | ((a - b).abs() <= rtol * rms + 1e-30 + rtol * b.abs())


def _same_value(a, b):
    """Non-tensor leaves: numbers within float32's noise (as the judge's same_value), else equal."""
    import math
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-5 + 1e-3 * abs(b)
    return type(a) is type(b) and a == b


MIN_DETERMINISTIC = 0.5  # of a result's elements: below it the task is unjudgeable


def gold_agreement(first, second, torch):
    """Two runs of the gold's test block under one seed, each with its own poison: (a mask per
    tensor leaf, in order: None where every element agrees, else a bool tensor of the elements
    that agree, the only ones a candidate is compared on; "" or why the task is unjudgeable).
    A result is unjudgeable when fewer than MIN_DETERMINISTIC of its elements agree, when a
    result that is not a tensor differs, or when the results' structure differs."""
    if len(first) != len(second):
        return [], "the gold returns %d results in one run and %d in another" % (len(first), len(second))
    masks, j = [], 0
    for i, (x, y) in enumerate(zip(first, second)):
        name = "result %d (leaf %d)" % (j, i) if isinstance(x, torch.Tensor) else "leaf %d" % i
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return [], "%s is a tensor in one run of the gold and not in another" % name
        if not isinstance(x, torch.Tensor):
            if not _same_value(x, y):
                return [], "%s is %s in one run of the gold and %s in another" % (
                    name, repr(x)[:80], repr(y)[:80])
            continue
        j += 1
        if x.shape != y.shape or x.dtype != y.dtype:
            return [], "%s is %s %s in one run of the gold and %s %s in another" % (
                name, tuple(x.shape), x.dtype, tuple(y.shape), y.dtype)
        if x.numel() == 0:
            masks.append(None)
            continue
        agree = agreeing(x, y.to(x.device), torch)
        kept = int(agree.sum())
        if kept == x.numel():
            masks.append(None)
        elif kept < MIN_DETERMINISTIC * x.numel():
            return [], ("%s: %.0f%% of its %d elements differ between two runs of the gold on the same seed "
                        "(memory it leaves unwritten, or nondeterminism)" % (
                            name, 100.0 * (x.numel() - kept) / x.numel(), x.numel()))
        else:
            masks.append(agree.contiguous())
    return masks, ""


RACE_RUNS = 3  # runs of the gold with the first run's poison, where its two runs disagree


def without_racing_results(first, again, masks, torch):
    """The masks of gold_agreement with every tensor result that differs between the first run
    of the gold and any of the runs `again` (under the same seed *and the same poison*) compared
    on nothing: its elements depend on more than the inputs and the memory it leaves unwritten,
    on the order in which its programs write (G/quantize_copy_kv's, G/kv_cache_filling's and
    G/index_select_bwd's repeated destinations, whose winner changes from one run to the next on
    a GPU) or on another source of nondeterminism, so a mask from two runs cannot say which of
    its elements the gold determines. Detection by sampling: a race whose winner happened to be
    the same in all RACE_RUNS runs is not seen (on an H200, one run after the first missed
    G/kv_cache_filling's). Returns (masks, "" or why the task is unjudgeable: every tensor result
    races)."""
    out, j, racing = list(masks), 0, []
    for i, x in enumerate(first):
        if not isinstance(x, torch.Tensor):
            continue
        for run in again:
            y = run[i] if i < len(run) else None
            if isinstance(y, torch.Tensor) and x.shape == y.shape and x.numel() and \
                    not bool(agreeing(x, y.to(x.device), torch).all()):
                out[j] = torch.zeros(x.shape, dtype=torch.bool, device=x.device)
                racing.append(j)
                break
        j += 1
    if racing and len(racing) == j:
        return [], ("every tensor result of the gold differs between two runs with the same inputs and the "
                    "same unwritten memory (its programs race, or it is nondeterministic): results %s" %
                    ", ".join(map(str, racing)))
    return out, ""


def _reference_run(source, test_source, test_function, seed, device, entries, tally, poison, fresh=False):
    """One run of the reference's test block in a fresh namespace, its uninitialised allocations
    filled with poison `poison` (poisoned_allocations), its floating literals fresh with `fresh`:
    (its leaves, the ops its entry points ran, the block's own op counts, the entry points whose
    every call from the block launched a Triton kernel (Launches))."""
    import torch
    namespace = {"__name__": "kf_reference"}
    exec(_compiled(for_device(source, device), "kforge-reference"), namespace)
    ops = set()
    if defines_triton_kernels(namespace):
        record_ops(namespace, entries, ops)
    code = _compiled(for_device(test_source, device), "kforge-test-block")
    if tally is not None:
        for name in entries:
            if _plain_function(namespace.get(name)):
                namespace[name] = _paused(namespace[name], tally[1])
        tally[0](code)
    counts = "{}"
    launches = Launches(namespace, entries)
    try:
        # Grad enabled, as TritonBench runs its test blocks (some call backward); the runner's
        # interpreter has it off for KernelBench models.
        with torch.enable_grad(), poisoned_allocations(poison, torch), launches:
            leaves = run(namespace, test_source, test_function, seed, device, torch, code=code, fresh=fresh)
    finally:
        if tally is not None:
            counts = tally[2]()
    return leaves, sorted(ops), counts, must_launch(namespace, entries, launches)


def must_launch(namespace, entries, launches):
    """The entry points whose every call from the block must launch a Triton kernel: all of them
    for a PyTorch reference (TritonBench-T: the task is to write it in Triton); for a Triton
    reference (TritonBench-G), those whose every call launched one in the gold's run
    (`launches`, a Launches that was installed): a gold helper that launches nothing asks
    nothing of the candidate's."""
    if not defines_triton_kernels(namespace):
        return sorted(entries)
    return sorted(launches.called - launches.launchless)


def reference_leaves(source, test_source, test_function, seed, device, entries=(), tally=None, twice=True,
                     fresh=False, stubs=False):
    """The judge's side: the reference implementation and its test block, run under `seed` in a
    fresh namespace, its uninitialised memory poisoned; with `twice`, run again in another fresh
    namespace with another poison (gold agreement, issue 22 §2) and, where the two disagree,
    RACE_RUNS more times with the first run's poison (without_racing_results); with `fresh`, its floating
    literals drawn anew (fresh_literals); with `stubs`, run with its entry points stubbed too
    (stub_verdict). Returns split()'s pair for the first run; a mask per tensor result (None,
    the elements on which the two runs agree, or none for a result that races: gold_agreement,
    without_racing_results; all None without `twice`); ""
    or why the task is unjudgeable; for a Triton reference (TritonBench-G), the names of the
    PyTorch ops its entry points ran (the task's own: a candidate may run them too), else [];
    the PyTorch ops the test block itself ran, counted by line (JSON, "{}" without `tally`);
    the entry points each call of which must launch a Triton kernel (must_launch); and "" or
    why stubbed entry points give the gold's results ("" without `stubs`).
    `tally`: (begin(code), pause(bool), end() -> JSON), the judge's native recorder
    (op_tally.hpp), the same one that counts the candidate's side, armed for the first run only;
    the reference's entry points are paused, so their compute is no allowance for the
    candidate's."""
    import os

    import torch
    if device == "cpu":  # a TritonBench-G reference is Triton: its kernels run in Triton's interpreter
        os.environ["TRITON_INTERPRET"] = "1"
    first, ops, counts, launch = _reference_run(
        source, test_source, test_function, seed, device, entries, tally, 0, fresh)
    masks, unjudgeable = [None] * sum(isinstance(v, torch.Tensor) for v in first), ""
    if twice:
        second, _, _, _ = _reference_run(source, test_source, test_function, seed, device, entries, None, 1, fresh)
        masks, unjudgeable = gold_agreement(first, second, torch)
        if not unjudgeable and any(m is not None for m in masks):
            again = [_reference_run(source, test_source, test_function, seed, device, entries, None, 0, fresh)[0]
                     for _ in range(RACE_RUNS)]
            masks, unjudgeable = without_racing_results(first, again, masks, torch)
    stubbed = stub_verdict(source, test_source, test_function, seed, device, entries, first) if stubs else ""
    tensors, others = split(first, torch, device)
    masks = [m if m is None else m.to(device) for m in masks]
    return tensors, others, masks, unjudgeable, ops, counts, launch, stubbed
