#!/usr/bin/env python3
"""Checks every Triton exemplar (prompts/exemplars/triton/) against its task's reference.

Usage: TRITON_INTERPRET=1 python3 tests/tools/check_triton_exemplars.py [--profile ci] [--device cpu]
                                                                         [--trials 2] [FILTER]

Needs torch and triton (under TRITON_INTERPRET=1 on a machine without a GPU, the Triton
interpreter runs the kernels on CPU tensors). For each exemplar: the task's module from the
kforge-core suite (the `add` exemplar's own reference.py) with the profile's constants applied,
Model(*get_init_inputs()) seeded, inputs from get_inputs() under seed 1000+trial, then
kf_forward(*inputs, *parameters, *buffers) (named_parameters() order, as the C ABI), compared
with the reference output under the task's tolerance (suite.json, else fp32 1e-4). Prints one
row per exemplar and exits 1 if any fails. A kf_forward that takes `out` gets preallocated
outputs (the resize exemplar's output size comes from the constructor, not an input).
"""

import argparse
import importlib.util
import inspect
import json
import os
import re
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXEMPLARS = os.path.join(ROOT, "prompts", "exemplars", "triton")
SUITE = os.path.join(ROOT, "benchmarks", "suites", "kforge-core")
DEFAULT_TOL = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2), "float64": (1e-8, 1e-8)}


def apply_profile(source, overrides):
    """Rewrites top-level `NAME = ...` lines, as kforge's apply_profile does."""
    lines = source.split("\n")
    done = set()
    for i, line in enumerate(lines):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=", line)
        if m and m.group(1) in overrides and m.group(1) not in done:
            lines[i] = "%s = %s" % (m.group(1), overrides[m.group(1)])
            done.add(m.group(1))
    return "\n".join(lines)


def load_module(name, source, path):
    spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = path
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def compare(torch, got, want, tol):
    got, want = as_tuple(got), as_tuple(want)
    if len(got) != len(want):
        return "returned %d outputs, expected %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor):
            return "output %d is %s, not a tensor" % (i, type(g).__name__)
        if tuple(g.shape) != tuple(w.shape):
            return "output %d shape %s, expected %s" % (i, tuple(g.shape), tuple(w.shape))
        if g.dtype != w.dtype:
            return "output %d dtype %s, expected %s" % (i, g.dtype, w.dtype)
        atol, rtol = tol.get(str(w.dtype).replace("torch.", ""), (0.0, 0.0))
        if not torch.allclose(g, w, atol=atol, rtol=rtol):
            diff = (g.double() - w.double()).abs()
            return "output %d differs: max abs diff %.3g (atol %g, rtol %g)" % (i, diff.max().item(), atol, rtol)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("filter", nargs="?", default="")
    args = ap.parse_args()
    import torch

    manifest = json.load(open(os.path.join(SUITE, "suite.json")))
    tasks = {t["id"]: t for t in manifest["tasks"]}
    rows, failed = [], 0
    for dirpath, _, files in sorted(os.walk(EXEMPLARS)):
        if "kernel.py" not in files:
            continue
        ex_id = os.path.relpath(dirpath, EXEMPLARS)
        if args.filter not in ex_id:
            continue
        t0 = time.time()
        try:
            if ex_id == "add":
                ref_path = os.path.join(dirpath, "reference.py")
                entry = {}
            else:
                entry = tasks[ex_id]
                ref_path = os.path.join(SUITE, entry["file"])
            source = open(ref_path).read()
            source = apply_profile(source, {k: str(v) for k, v in entry.get("profiles", {}).get(args.profile, {}).items()})
            ref = load_module("ref_" + ex_id.replace("/", "_"), source, ref_path)
            tol = dict(DEFAULT_TOL)
            for dtype, t in entry.get("tolerance", {}).items():
                if dtype == "*":
                    tol = {k: (t["atol"], t["rtol"]) for k in tol}
                else:
                    tol[dtype] = (t["atol"], t["rtol"])
            cand = load_file("cand_" + ex_id.replace("/", "_"), os.path.join(dirpath, "kernel.py"))
            torch.manual_seed(0)
            model = ref.Model(*ref.get_init_inputs()).to(args.device).eval()
            params = [p.detach() for _, p in model.named_parameters()] + [b for _, b in model.named_buffers()]
            takes_out = "out" in inspect.signature(cand.kf_forward).parameters
            problem = None
            for trial in range(args.trials):
                torch.manual_seed(1000 + trial)
                inputs = [x.to(args.device) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
                with torch.no_grad():
                    want = model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                kwargs = {}
                if takes_out:
                    w = as_tuple(want)
                    outs = tuple(torch.empty_like(o) for o in w)
                    kwargs["out"] = outs[0] if len(outs) == 1 else outs
                got = cand.kf_forward(*inputs, *params, **kwargs)
                problem = compare(torch, got, want, tol)
                if problem:
                    problem = "trial %d: %s" % (trial, problem)
                    break
        except Exception as e:  # report and go on
            problem = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1] if str(e).strip() else "")
            if os.environ.get("VERBOSE"):
                traceback.print_exc()
        dt = time.time() - t0
        rows.append((ex_id, "FAIL" if problem else "pass", dt, problem or ""))
        failed += bool(problem)
        print("%-40s %-5s %6.1fs  %s" % rows[-1], flush=True)
    print("%d/%d passed (profile %s, device %s, TRITON_INTERPRET=%s, torch %s)" %
          (len(rows) - failed, len(rows), args.profile, args.device, os.environ.get("TRITON_INTERPRET", "0"),
           torch.__version__))
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
