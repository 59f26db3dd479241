#!/usr/bin/env python3
"""Checks gold-equivalent Triton candidates against their TritonBench-T references.

Usage: python3 tests/tools/check_tritonbench_candidates.py TB_T_DIR CANDIDATES_DIR [--device cpu|cuda]

TB_T_DIR holds TritonBench-T task files (<name>.py: the PyTorch reference, a separator line
of 146 '#', then the test block). CANDIDATES_DIR holds <name>/kernel.py, one per task: a module
defining the same function computed with Triton kernels. For every candidate and seed 0, 1, 2:
the reference part plus the test block are exec'd in one fresh namespace, the candidate's
source plus the same test block in another (torch.manual_seed(seed) before each exec); the
results (the `test_results` global, else the return value of the `test_*` function) are
flattened leaf by leaf (nested dicts/lists/tuples, in order) and compared: tensors on shape,
dtype and torch.allclose(rtol=1e-3, atol=1e-5, equal_nan=True) after .cpu(), anything else
with ==. With --device cpu (the default) the literals 'cuda' / "cuda" in the test block become
'cpu' and TRITON_INTERPRET=1 is set before triton is imported, so the Triton interpreter runs
the kernels on the CPU. Prints one line per task; exits 0 only if all pass.
"""

import argparse
import os
import re
import sys
import traceback

SEPARATOR = "#" * 146
SEEDS = (0, 1, 2)
RTOL, ATOL = 1e-3, 1e-5


def split_task(source):
    """Returns (reference part, test block), split at the separator line."""
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == SEPARATOR:
            return "\n".join(lines[:i]), "\n".join(lines[i + 1:])
    raise ValueError("no separator line of 146 '#'")


def run_block(torch, source, filename, seed):
    """Execs source in a fresh namespace under seed; returns the test results."""
    ns = {"__name__": "__tb_" + re.sub(r"\W", "_", filename) + "__"}
    torch.manual_seed(seed)
    exec(compile(source, filename, "exec"), ns)
    if "test_results" in ns:
        return ns["test_results"]
    tests = [v for k, v in ns.items() if k.startswith("test_") and callable(v)]
    if len(tests) != 1:
        raise RuntimeError("no test_results global and %d test_* functions" % len(tests))
    return tests[0]()


def flatten(value, path="result"):
    """Yields (path, leaf) for nested dicts/lists/tuples, in order."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(v, "%s[%r]" % (path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from flatten(v, "%s[%d]" % (path, i))
    else:
        yield path, value


def compare(torch, ref, got):
    """Returns None when ref and got match, else a line naming the first mismatching leaf."""
    ref_leaves, got_leaves = list(flatten(ref)), list(flatten(got))
    for (rpath, r), (gpath, g) in zip(ref_leaves, got_leaves):
        if rpath != gpath:
            return "structure differs: reference %s, candidate %s" % (rpath, gpath)
        if isinstance(r, torch.Tensor) or isinstance(g, torch.Tensor):
            if not (isinstance(r, torch.Tensor) and isinstance(g, torch.Tensor)):
                return "%s: reference %s, candidate %s" % (rpath, type(r).__name__, type(g).__name__)
            if r.shape != g.shape:
                return "%s: shape %s != %s" % (rpath, tuple(g.shape), tuple(r.shape))
            if r.dtype != g.dtype:
                return "%s: dtype %s != %s" % (rpath, g.dtype, r.dtype)
            r, g = r.detach().cpu(), g.detach().cpu()
            if not torch.allclose(g, r, rtol=RTOL, atol=ATOL, equal_nan=True):
                if r.is_floating_point() or r.is_complex():
                    err = (g - r).abs()
                    err = err[~torch.isnan(err)]
                    worst = err.max().item() if err.numel() else float("nan")
                    return "%s: values differ (max abs err %.3g)" % (rpath, worst)
                return "%s: values differ" % rpath
        else:
            try:
                same = bool(r == g)
            except Exception:
                same = False
            if not same:
                return "%s: %r != %r" % (rpath, g, r)
    if len(ref_leaves) != len(got_leaves):
        return "leaf count %d != %d" % (len(got_leaves), len(ref_leaves))
    return None


def check_task(torch, tb_dir, name, kernel_path, device):
    task_path = os.path.join(tb_dir, name + ".py")
    if not os.path.isfile(task_path):
        return "no task file %s" % task_path
    with open(task_path) as f:
        reference, test_block = split_task(f.read())
    with open(kernel_path) as f:
        candidate = f.read()
    if device == "cpu":
        test_block = test_block.replace("'cuda'", "'cpu'").replace('"cuda"', '"cpu"')
    for seed in SEEDS:
        ref = run_block(torch, reference + "\n" + test_block, task_path, seed)
        try:
            got = run_block(torch, candidate + "\n" + test_block, kernel_path, seed)
        except Exception as e:
            tb = traceback.extract_tb(e.__traceback__)
            own = [fr for fr in tb if fr.filename == kernel_path]
            where = own[-1] if own else (tb[-1] if tb else None)
            at = " at %s:%s" % (os.path.basename(where.filename), where.lineno) if where else ""
            return "seed %d: candidate raised %s: %s%s" % (seed, type(e).__name__, str(e).split("\n")[0], at)
        mismatch = compare(torch, ref, got)
        if mismatch:
            return "seed %d: %s" % (seed, mismatch)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tb_t_dir")
    ap.add_argument("candidates_dir")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = ap.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (by the candidates)
    import torch

    names = sorted(d for d in os.listdir(args.candidates_dir)
                   if os.path.isfile(os.path.join(args.candidates_dir, d, "kernel.py")))
    if not names:
        print("no candidates under %s" % args.candidates_dir)
        return 1
    failed = 0
    for name in names:
        kernel_path = os.path.join(args.candidates_dir, name, "kernel.py")
        try:
            problem = check_task(torch, args.tb_t_dir, name, kernel_path, args.device)
        except Exception as e:
            problem = "error: %s: %s" % (type(e).__name__, str(e).split("\n")[0])
        if problem:
            failed += 1
            print("FAIL %-20s %s" % (name, problem))
        else:
            print("PASS %-20s" % name)
    print("%d/%d passed" % (len(names) - failed, len(names)))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
