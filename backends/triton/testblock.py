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
    """Leaves of nested dicts (in insertion order), lists and tuples."""
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
    else:
        out.append(repr(value))
    return out


def run(namespace, test_source, test_function, seed, device, torch, code=None):
    """Executes the test block in `namespace` (which holds the implementation) under
    torch.manual_seed(seed) and returns its results' leaves. `code`: the block already compiled
    (the candidate's host runs the code object its native recorder counts by)."""
    torch.manual_seed(seed)
    exec(code if code is not None else _compiled(for_device(test_source, device), "kforge-test-block"), namespace)
    for name in RESULT_NAMES:
        if name in namespace:
            return flatten(namespace[name], torch)
    fn = namespace.get(test_function)
    if not callable(fn):
        raise RuntimeError("the test block leaves no test_results / result_gold and defines no %s()" % test_function)
    return flatten(fn(), torch)


def split(leaves, torch, device=None):
    """(the tensor leaves, contiguous, in order, on `device` when given; the other leaves as JSON
    [[position, value], ...]). Both sides move their results to the task's device, as
    TritonBench's own comparison moves both to one device (the CPU): a block whose gold returns
    a CPU tensor compares the same values on either side (issue 22 §2)."""
    tensors = [(v if device is None else v.to(device)).contiguous() for v in leaves if isinstance(v, torch.Tensor)]
    others = [[i, v] for i, v in enumerate(leaves) if not isinstance(v, torch.Tensor)]
    return tensors, json.dumps(others, allow_nan=True)


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
        if callable(namespace.get(name)):
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


def reference_leaves(source, test_source, test_function, seed, device, entries=(), tally=None):
    """The judge's side: the reference implementation and its test block in a fresh namespace;
    returns split()'s pair; for a Triton reference (TritonBench-G), the names of the PyTorch ops
    its entry points ran (the task's own: a candidate may run them too), else []; and the
    PyTorch ops the test block itself ran, counted by line (JSON, "{}" without `tally`).
    `tally`: (begin(code), pause(bool), end() -> JSON), the judge's native recorder
    (op_tally.hpp), the same one that counts the candidate's side; the reference's entry points
    are paused, so their compute is no allowance for the candidate's."""
    import os

    import torch
    if device == "cpu":  # a TritonBench-G reference is Triton: its kernels run in Triton's interpreter
        os.environ["TRITON_INTERPRET"] = "1"
    namespace = {"__name__": "kf_reference"}
    exec(_compiled(for_device(source, device), "kforge-reference"), namespace)
    ops = set()
    if defines_triton_kernels(namespace):
        record_ops(namespace, entries, ops)
    code = _compiled(for_device(test_source, device), "kforge-test-block")
    if tally is not None:
        for name in entries:
            if callable(namespace.get(name)):
                namespace[name] = _paused(namespace[name], tally[1])
        tally[0](code)
    counts = "{}"
    try:
        # Grad enabled, as TritonBench runs its test blocks (some call backward); the runner's
        # interpreter has it off for KernelBench models.
        with torch.enable_grad():
            tensors, others = split(run(namespace, test_source, test_function, seed, device, torch, code=code),
                                    torch, device)
    finally:
        if tally is not None:
            counts = tally[2]()
    return tensors, others, sorted(ops), counts
