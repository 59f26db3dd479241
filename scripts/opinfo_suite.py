#!/usr/bin/env python3
"""Generates kforge's OpInfo operator suite (issue 24) from the installed PyTorch's OpInfo database.

Run with the venv that holds torch:  /opt/kforge/venv/bin/python scripts/opinfo_suite.py OUT_DIR

As BackendBench builds its OpInfo suite (its suite/opinfo.py, read, not copied): every OpInfo entry
whose name has no "." (or is an nn.functional one) that supports the dtype on the device; each sample
input is run under a dispatch recorder and kept when exactly one ATen overload ran and calling that
overload directly gives the same result. Then the filters:
  - random ops (the overload carries torch.Tag.nondeterministic_seeded),
  - creation ops (no tensor among the arguments),
  - view-only and in-place ops (a return aliases an input, or the schema mutates one),
  - ops the Triton host's recorder always allows (allocation, views, copies, fills: a candidate
    could call them freely, so a torch_fallback could not be told),
  - cases kforge cannot express: a non-tensor result, an argument that has no text in BackendBench's
    trace format, or (since kforge redraws tensors by BackendBench's rule) a case whose operator fails
    or turns non-deterministic on redrawn values.
Operators whose cost is launch overhead are flagged, not dropped (BackendBench's rule: the largest
case runs in less than 1.3x the time of an empty launch, torch.empty(0); here timed on this machine's
device with time.perf_counter).

Writes OUT_DIR/operators.txt in BackendBench's trace format (`Operator:` / `cnt: 0, ...`: OpInfo cases
are synthetic) and OUT_DIR/opinfo.json (counts, flags, exclusions with reasons); prints the number of
operators and cases. `kforge suites --suite OUT_DIR` loads it.
"""
import argparse
import json
import math
import os
import sys
import time
from collections import OrderedDict

import torch
from torch.testing import make_tensor
from torch.utils._python_dispatch import TorchDispatchMode

ABBR = {torch.bfloat16: "bf16", torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
        torch.complex64: "c64", torch.complex128: "c128", torch.int8: "i8", torch.int16: "i16",
        torch.int32: "i32", torch.int64: "i64", torch.bool: "b8", torch.uint8: "u8"}

# The Triton host's ALLOWED_OPS (backends/triton/host.py), by overload packet: read from the file so
# that the two never disagree.
HOST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "backends", "triton", "host.py")


def host_allowed():
    import ast
    tree = ast.parse(open(HOST).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ALLOWED_OPS" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise SystemExit("no ALLOWED_OPS in " + HOST)


class Unserializable(Exception):
    pass


def text(v):
    """A value in BackendBench's trace format."""
    if isinstance(v, torch.Tensor):
        if v.dtype not in ABBR or v.layout != torch.strided or v.is_quantized:
            raise Unserializable("tensor of %s / %s" % (v.dtype, v.layout))
        shape = list(v.shape)
        if v.is_contiguous():
            return "T(%s, %s)" % (shape, ABBR[v.dtype])
        if v.storage_offset() != 0:
            raise Unserializable("a view with a storage offset")
        return "T(%s, %s, %s)" % (shape, ABBR[v.dtype], list(v.stride()))
    if isinstance(v, (list, tuple)):
        inner = ", ".join(text(x) for x in v)
        if isinstance(v, tuple):
            return "(%s%s)" % (inner, "," if len(v) == 1 else "")
        return "[%s]" % inner
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return "inf" if v == math.inf else "-inf" if v == -math.inf else "nan" if v != v else repr(v)
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (torch.dtype, torch.memory_format, torch.layout)):
        return str(v)
    raise Unserializable(type(v).__name__)


def case_text(args, kwargs):
    pos = ", ".join(text(a) for a in args)
    return "((%s%s), {%s})" % (pos, "," if len(args) == 1 else "",
                               ", ".join("'%s': %s" % (k, text(v)) for k, v in kwargs.items()))


def redraw(v):
    """BackendBench's T(...) rule, as kforge's generated module draws inputs."""
    if isinstance(v, torch.Tensor):
        kw = dict(low=0, high=1) if v.dtype.is_floating_point else {}
        if v.is_contiguous():
            return make_tensor(list(v.shape), dtype=v.dtype, device=v.device, **kw)
        size, stride = list(v.shape), list(v.stride())
        extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
        return make_tensor([extent], dtype=v.dtype, device=v.device, **kw).as_strided(size, stride)
    if isinstance(v, list):
        return [redraw(x) for x in v]
    if isinstance(v, tuple):
        return tuple(redraw(x) for x in v)
    return v


def leaves(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]


def same(a, b):
    a, b = leaves(a), leaves(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
            return False
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        try:
            torch.testing.assert_close(x, y, equal_nan=True, atol=1e-2, rtol=1e-2)
        except AssertionError:
            return False
    return True


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append((func, args, kwargs or {}))
        return func(*args, **(kwargs or {}))


def exclusion(func, args, allowed):
    """Why an overload is not an operator task (None: it is one)."""
    if torch.Tag.nondeterministic_seeded in func.tags:
        return "random"
    schema = func._schema
    if any(r.alias_info is not None for r in schema.returns):
        return "view or in-place (a return aliases an input)"
    if schema.is_mutable:
        return "mutates an input"
    if func.overloadpacket.__name__ in allowed:
        return "allowed to every Triton candidate (allocation, view, copy, fill): a fallback could not be told"
    if not any(isinstance(a, torch.Tensor) for a in leaves(list(args))):
        return "creation (no tensor argument)"
    return None


def timed(fn, reps=50):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def import_op_db():
    """torch's OpInfo database. Its test utilities import `expecttest` (a test-only dependency, absent
    from a runtime venv) for a TestCase base class only: where it is missing, unittest's stands in."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        import types
        import unittest
        shim = types.ModuleType("expecttest")
        shim.TestCase = unittest.TestCase
        sys.modules["expecttest"] = shim
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def collect(device, dtypes, allowed, max_cases):
    op_db = import_op_db()

    ops = OrderedDict()  # overload name -> list of (text, args, kwargs)
    excluded = {}
    dropped = {"several ATen ops": 0, "unserializable": 0, "values matter": 0, "result not tensors": 0,
               "sample failed": 0}
    for info in op_db:
        if "." in info.name and "nn.functional" not in info.name:
            continue
        for dtype in dtypes:
            if dtype not in info.supported_dtypes(device):
                continue
            try:
                samples = list(info.sample_inputs(device, dtype))
            except Exception:
                dropped["sample failed"] += 1
                continue
            for s in samples:
                args, kwargs = [s.input] + list(s.args), dict(s.kwargs)
                try:
                    with Recorder() as rec:
                        info.op(*args, **kwargs)
                except Exception:
                    dropped["sample failed"] += 1
                    continue
                if len(rec.ops) != 1:
                    dropped["several ATen ops"] += 1
                    continue
                func, fargs, fkwargs = rec.ops[0]
                name = "aten.%s.%s" % (func.overloadpacket.__name__, func._overloadname)
                why = exclusion(func, fargs, allowed)
                if why:
                    excluded[name] = why
                    continue
                try:
                    line = case_text(fargs, fkwargs)
                except Unserializable:
                    dropped["unserializable"] += 1
                    continue
                try:
                    x = redraw(fargs), redraw(fkwargs)
                    y1 = func(*x[0], **x[1])
                    y2 = func(*x[0], **x[1])
                except Exception:
                    dropped["values matter"] += 1
                    continue
                if not all(isinstance(t, torch.Tensor) for t in leaves(y1)):
                    dropped["result not tensors"] += 1
                    continue
                if not same(y1, y2):
                    dropped["values matter"] += 1
                    continue
                cases = ops.setdefault(name, OrderedDict())
                if line not in cases and (max_cases <= 0 or len(cases) < max_cases):
                    cases[line] = (func, x)
    return ops, excluded, dropped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="the suite directory to write (operators.txt, opinfo.json)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="float32", help="comma-separated torch dtypes (default float32)")
    ap.add_argument("--max-cases", type=int, default=0, help="cases kept per operator (0: all)")
    ap.add_argument("--ops", default="", help="comma-separated overload names to keep (default: all)")
    a = ap.parse_args()
    torch.manual_seed(0)
    dtypes = [getattr(torch, d) for d in a.dtypes.split(",") if d]
    ops, excluded, dropped = collect(a.device, dtypes, host_allowed(), a.max_cases)
    if a.ops:
        keep = set(a.ops.split(","))
        ops = OrderedDict((k, v) for k, v in ops.items() if k in keep)
    empty = timed(lambda: torch.empty(0, device=a.device))
    flagged = {}
    for name, cases in ops.items():
        func, (args, kwargs) = max(cases.values(), key=lambda c: sum(
            t.numel() * t.element_size() for t in leaves(list(c[1][0])) if isinstance(t, torch.Tensor)))
        ratio = timed(lambda: func(*args, **kwargs)) / empty
        if ratio < 1.3:
            flagged[name] = round(ratio, 2)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "operators.txt"), "w") as f:
        for name, cases in ops.items():
            f.write("Operator: %s\n" % name)
            for line in cases:
                f.write("cnt: 0, %s\n" % line)
    n_cases = sum(len(c) for c in ops.values())
    meta = {"generator": "scripts/opinfo_suite.py", "torch": torch.__version__, "device": a.device,
            "dtypes": a.dtypes, "operators": len(ops), "cases": n_cases,
            "launch_overhead": {"rule": "largest case < 1.3x torch.empty(0), perf_counter on " + a.device,
                                "flagged": flagged},
            "excluded_operators": dict(sorted(excluded.items())), "dropped_cases": dropped}
    with open(os.path.join(a.out, "opinfo.json"), "w") as f:
        json.dump(meta, f, indent=2)
    print("OpInfo suite: %d operators, %d cases (%d flagged as launch overhead; %d overloads excluded) -> %s"
          % (len(ops), n_cases, len(flagged), len(excluded), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
