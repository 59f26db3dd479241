#!/usr/bin/env python3
"""An independent check of kforge's TritonBench-T verdicts (issue 38 §3): no false pass, no
correct kernel refused. It shares no code with the judge.

  check  PREP --out F.json [--workers N] [--timeout S]
      PREP is a folder `scripts/tritonbench_generated.py prepare` wrote (suite/data/
      TritonBench_T_v1/<task>.py, kernels/T/<task>/kernel.py). For each task, in a process of its
      own (plain Python, no confinement: run it on a machine whose data you can lose), runs the
      task file's reference with its test block under torch.manual_seed(0), then the candidate's
      code with the same block and seed, counting Triton kernel launches
      (triton.runtime.jit.JITFunction.run); compares every tensor of the two `test_results` with
      torch.allclose (atol = rtol = 1e-3 for floating tensors, equal_nan; exact otherwise) and
      every other leaf with ==. Writes {task: {"correct": bool, "launches": n, "why": str}}.

  compare  F.json ATTEMPTS.jsonl
      Prints the table of the independent verdicts against kforge's (attempts.jsonl of `kforge
      eval` over the same PREP): false passes (kforge pass, independently wrong or no Triton
      launch) and refusals of kernels found correct with a launch, each with kforge's sub-kind
      and message. Exit 1 when there is a false pass.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

SEPARATOR = "#" * 146

CHILD = r'''
import json, os, sys, tempfile
import torch
import triton
import triton.runtime.jit as jit

ref_path, cand_path, block_name = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(ref_path, encoding="utf-8").read()
lines = text.splitlines()
cut = next(i for i, l in enumerate(lines) if l.rstrip() == "#" * 146)
reference, block = "\n".join(lines[:cut]) + "\n", "\n".join(lines[cut + 1:]) + "\n"
candidate = open(cand_path, encoding="utf-8").read()

launches = [0]
def count(cls):  # launches through cls.run: JITFunction on a GPU, InterpretedFunction under TRITON_INTERPRET
    original = cls.run
    def counted(self, *a, **k):
        launches[0] += 1
        return original(self, *a, **k)
    cls.run = counted
count(jit.JITFunction)
if os.environ.get("TRITON_INTERPRET") == "1":
    import triton.runtime.interpreter as interpreter
    count(interpreter.InterpretedFunction)

def results(code, name):
    # From a file of its own: Triton's @jit reads its function's source (inspect), and Triton
    # 3.6 refuses functions defined in a string.
    path = os.path.join(tempfile.mkdtemp(prefix="tb-independent-"), name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(code + "\n" + block)
    ns = {"__name__": "__main__", "__file__": path}
    torch.manual_seed(0)
    exec(compile(code + "\n" + block, path, "exec"), ns)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return ns.get("test_results")

def leaves(x, out):
    if isinstance(x, dict):
        for k in sorted(x, key=str):
            leaves(x[k], out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            leaves(v, out)
    else:
        out.append(x)
    return out

def same(a, b):
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return False
    if not isinstance(a, torch.Tensor):
        return a == b or (a != a and b != b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, atol=1e-3, rtol=1e-3, equal_nan=True))
    return bool(torch.equal(a, b))

gold = leaves(results(reference, block_name + "_reference"), [])
before = launches[0]
try:
    got = leaves(results(candidate, block_name + "_candidate"), [])
except BaseException as e:
    print(json.dumps({"correct": False, "launches": launches[0] - before, "why": "raised: %s" % str(e)[:200]}))
    sys.exit(0)
n = launches[0] - before
if len(gold) != len(got):
    why = "%d results, the reference has %d" % (len(got), len(gold))
else:
    bad = [i for i, (g, c) in enumerate(zip(gold, got)) if not same(g, c)]
    why = "results %s differ" % bad[:8] if bad else ""
print(json.dumps({"correct": not why, "launches": n, "why": why}))
'''


def check_one(prep, task, timeout):
    ref = os.path.join(prep, "suite", "data", "TritonBench_T_v1", task + ".py")
    cand = os.path.join(prep, "kernels", "T", task, "kernel.py")
    if not os.path.exists(cand):
        return task, {"correct": False, "launches": 0, "why": "no candidate"}
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, ref, cand, task], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return task, {"correct": False, "launches": 0, "why": "timeout"}
    last = (p.stdout.strip().splitlines() or [""])[-1]
    try:
        return task, json.loads(last)
    except ValueError:
        return task, {"correct": False, "launches": 0, "why": "crashed rc=%d: %s" % (
            p.returncode, (p.stderr.strip().splitlines() or [""])[-1][:200])}


def check(a):
    tasks = sorted(os.listdir(os.path.join(a.prep, "kernels", "T")))
    verdicts = {}
    with concurrent.futures.ThreadPoolExecutor(a.workers) as pool:
        for task, v in pool.map(lambda t: check_one(a.prep, t, a.timeout), tasks):
            verdicts[task] = v
    with open(a.out, "w") as f:
        json.dump(verdicts, f, indent=1, sort_keys=True)
    good = sum(v["correct"] and v["launches"] > 0 for v in verdicts.values())
    print("independent: %d of %d correct with a Triton launch (%d correct without one)" % (
        good, len(verdicts), sum(v["correct"] and not v["launches"] for v in verdicts.values())))


def compare(a):
    verdicts = json.load(open(a.verdicts))
    records = {}
    for line in open(a.attempts):
        r = json.loads(line)
        records[r["task"].split("/")[-1]] = r
    false_pass, refused, agree = [], [], 0
    for task, v in sorted(verdicts.items()):
        r = records.get(task)
        kf_pass = bool(r and r.get("outcome") == "pass")
        right = v["correct"] and v["launches"] > 0
        if kf_pass and not right:
            false_pass.append((task, v["why"] or "no Triton launch"))
        elif right and not kf_pass:
            refused.append((task, (r or {}).get("outcome", "missing"), (r or {}).get("sub_kind", ""),
                            (r or {}).get("message", "")[:160].replace("\n", " ")))
        else:
            agree += 1
    print("kforge passes: %d; independent correct with a launch: %d; agree on %d of %d" % (
        sum(r.get("outcome") == "pass" for r in records.values()),
        sum(v["correct"] and v["launches"] > 0 for v in verdicts.values()), agree, len(verdicts)))
    print("false passes: %d" % len(false_pass))
    for t, why in false_pass:
        print("  FALSE PASS %-36s %s" % (t, why))
    print("refused though independently correct: %d" % len(refused))
    for t, o, s, m in refused:
        print("  refused %-36s %s/%s: %s" % (t, o, s, m))
    return 1 if false_pass else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("prep")
    c.add_argument("--out", required=True)
    c.add_argument("--workers", type=int, default=8)
    c.add_argument("--timeout", type=int, default=120)
    m = sub.add_parser("compare")
    m.add_argument("verdicts")
    m.add_argument("attempts")
    a = ap.parse_args(argv[1:])
    return check(a) if a.cmd == "check" else compare(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv) or 0)
