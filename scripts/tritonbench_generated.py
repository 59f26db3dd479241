#!/usr/bin/env python3
"""One model's recorded TritonBench-T generations judged by `kforge eval`, timed with 1 and N runners
on one device (issue 21 §3: the 166 candidates in <= 60 s on one H100). Two steps:

  prepare  (where the TritonBench data is; the GPU machine has no network)
      tritonbench_generated.py prepare --checkout TB | --git-dir TB.git  [--model gpt-4o] --out DIR
    reads LLM_generated/Bench_T_general_purpose/output_<model>.jsonl (the zero-shot generations,
    one per T task) and writes DIR/suite/data/TritonBench_T_v1/ (the 166 task files and the stats
    file: a TritonBench checkout with only the T channel), DIR/kernels/T/<task>/kernel.py (each
    generation's code: the last ```python fence of its reply, cut at a separator line; tests/tools/
    tritonbench_text.py) and DIR/mapping.json (generation line -> task, and how it was matched:
    TritonBench's own rule in EVAL/eval_T/0_call_acc.py, the instruction's functional description
    found in exactly one task's description; else the line's position, said so). A bare git
    directory is read with `git --git-dir=... show HEAD:path` (no work tree needed).

  time  (on the machine that judges)
      tritonbench_generated.py time DIR --kforge build/agent/kforge [--device cuda:0] [--runners 1,8]
          [--limit K] [--out OUT]
    runs `kforge eval --suite DIR/suite --backend triton --no-bench --profiler none --devices
    D,D,... --jobs N` for each N of --runners into OUT/eval-<N>, prints a table (runners, kernels,
    wall s, mean and median check ms, kernels per second, outcomes) and writes OUT/tritonbench-
    generated-<runners>.json; exit 1 when two runner counts (of this call, or --compare-with an
    earlier call's JSON) gave different verdicts for a kernel. --limit K judges only the first K
    tasks (a kernels folder of K tasks is made beside the others). The JSON also names each
    device's timed lock (the runner's hello: cuda-<PCI bus id>).
"""

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
from tritonbench_text import code_of_reply  # noqa: E402

GEN = "LLM_generated/Bench_T_general_purpose/output_%s.jsonl"
T_DIR = "data/TritonBench_T_v1"
STATS = ("data/TritonBench_T_v1.jsonl", "data/TritonBench_T_v1.json")


class Source:
    """A TritonBench checkout, or a bare git directory read at HEAD."""

    def __init__(self, checkout=None, git_dir=None):
        self.checkout, self.git_dir = checkout, git_dir

    def read(self, path):
        if self.checkout:
            with open(os.path.join(self.checkout, path), encoding="utf-8") as f:
                return f.read()
        return subprocess.run(["git", "--git-dir", self.git_dir, "show", "HEAD:" + path], check=True,
                              capture_output=True).stdout.decode("utf-8")

    def exists(self, path):
        if self.checkout:
            return os.path.exists(os.path.join(self.checkout, path))
        return subprocess.run(["git", "--git-dir", self.git_dir, "cat-file", "-e", "HEAD:" + path],
                              capture_output=True).returncode == 0

    def list(self, folder):
        if self.checkout:
            return sorted(os.listdir(os.path.join(self.checkout, folder)))
        out = subprocess.run(["git", "--git-dir", self.git_dir, "ls-tree", "--name-only", "HEAD", folder + "/"],
                             check=True, capture_output=True, text=True).stdout
        return sorted(os.path.basename(line) for line in out.splitlines())


def functional_description(instruction):
    """TritonBench's key (EVAL/eval_T/0_call_acc.py get_corresponding_files)."""
    if "Functional Description: " not in instruction or "Wrapper Entry Information:" not in instruction:
        return None
    return instruction.split("Functional Description: ")[-1].split("Wrapper Entry Information:")[0].replace("\n", "")


def match_tasks(generations, stats):
    """Each generation line -> (task file, how matched)."""
    out = []
    for i, g in enumerate(generations):
        key = functional_description(g.get("instruction", ""))
        hits = [s["file"] for s in stats if key and key in s.get("description", "").replace("\n", "")]
        if len(hits) == 1:
            out.append((hits[0], "description"))
        elif i < len(stats):
            out.append((stats[i]["file"], "position (%d description matches)" % len(hits)))
        else:
            out.append((None, "no task"))
    return out


def prepare(a):
    src = Source(a.checkout, a.git_dir)
    gen_path = GEN % a.model
    if not src.exists(gen_path):
        sys.exit("no %s in the TritonBench data" % gen_path)
    stats_path = next((p for p in STATS if src.exists(p)), None)
    if not stats_path:
        sys.exit("no %s in the TritonBench data" % " or ".join(STATS))
    stats_text = src.read(stats_path)
    stats = json.loads(stats_text)
    generations = [json.loads(line) for line in src.read(gen_path).splitlines() if line.strip()]
    shutil.rmtree(a.out, ignore_errors=True)
    t_out = os.path.join(a.out, "suite", T_DIR)
    os.makedirs(t_out)
    for name in src.list(T_DIR):
        if name.endswith(".py"):
            with open(os.path.join(t_out, name), "w", encoding="utf-8") as f:
                f.write(src.read(T_DIR + "/" + name))
    with open(os.path.join(a.out, "suite", stats_path), "w", encoding="utf-8") as f:
        f.write(stats_text)
    mapping, per_task = [], collections.Counter()
    for i, (g, (task_file, how)) in enumerate(zip(generations, match_tasks(generations, stats))):
        mapping.append({"line": i, "task": task_file and "T/" + task_file[:-3], "matched_by": how})
        if not task_file:
            continue
        per_task[task_file] += 1
        if per_task[task_file] > 1:  # one sample per task; a second generation for it is left out
            mapping[-1]["left_out"] = "a second generation for this task"
            continue
        kdir = os.path.join(a.out, "kernels", "T", task_file[:-3])
        os.makedirs(kdir)
        with open(os.path.join(kdir, "kernel.py"), "w", encoding="utf-8") as f:
            f.write(code_of_reply(g.get("predict", "")))
    with open(os.path.join(a.out, "mapping.json"), "w", encoding="utf-8") as f:
        json.dump({"model": a.model, "generations": gen_path, "lines": mapping}, f, indent=1)
    by = collections.Counter(m["matched_by"].split(" ")[0] for m in mapping)
    print("prepared %s: %d task files, %d generations of %s -> %d kernels (matched: %s)" % (
        a.out, len(os.listdir(t_out)), len(generations), a.model, len(per_task),
        ", ".join("%s %d" % kv for kv in sorted(by.items()))))


def limited_kernels(prep, limit):
    """The kernels folder, or one holding only the first `limit` tasks."""
    kernels = os.path.join(prep, "kernels")
    if not limit:
        return kernels
    sub = os.path.join(prep, "kernels-first-%d" % limit)
    shutil.rmtree(sub, ignore_errors=True)
    for name in sorted(os.listdir(os.path.join(kernels, "T")))[:limit]:
        shutil.copytree(os.path.join(kernels, "T", name), os.path.join(sub, "T", name))
    return sub


def eval_once(a, kernels, n, out):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.kforge, "eval", "--suite", os.path.join(a.prep, "suite"), "--backend", "triton", "--no-bench",
           "--profiler", "none", "--kernels", kernels, "--out", out, "--devices", ",".join([a.device] * n),
           "--jobs", str(max(n, a.jobs))]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    wall = time.time() - t0
    with open(out + ".log", "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    records = []
    if os.path.exists(os.path.join(out, "attempts.jsonl")):
        with open(os.path.join(out, "attempts.jsonl")) as f:
            records = [json.loads(line) for line in f]
    checks = [r["check_ms"] for r in records if isinstance(r.get("check_ms"), (int, float)) and r["check_ms"] > 0]
    outcomes = collections.Counter(r["outcome"] for r in records)
    tb = [line for line in p.stdout.splitlines() if "accuracy" in line.lower()]
    locks = []  # each runner's timed-lock name for its device (the hello's devices[].timed_lock)
    try:
        with open(os.path.join(out, "manifest.json")) as f:
            for d in json.load(f).get("devices", []):
                index = int(d["device"].split(":")[1]) if d["device"].startswith("cuda:") else None
                devs = d.get("runner", {}).get("devices", [])
                locks.append(next((x.get("timed_lock") for x in devs if x.get("index") == index), "cpu"))
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    return {"runners": n, "timed_locks": sorted(set(l for l in locks if l)), "device": a.device, "exit": p.returncode, "kernels": len(records), "wall_s": wall,
            "check_ms_mean": statistics.mean(checks) if checks else 0,
            "check_ms_median": statistics.median(checks) if checks else 0,
            "check_s_sum": sum(checks) / 1000, "kernels_per_s": len(records) / wall if wall > 0 else 0,
            "outcomes": dict(sorted(outcomes.items())), "tritonbench": tb,
            "verdicts": {r["task"]: [r["outcome"], r.get("sub_kind", "")] for r in records}, "command": cmd}


def time_runs(a):
    kernels = limited_kernels(a.prep, a.limit)
    os.makedirs(a.out, exist_ok=True)
    runs = []
    for n in [int(x) for x in a.runners.split(",")]:
        run_dir = os.path.join(a.runs_dir or a.out, "eval-%d" % n)
        r = eval_once(a, kernels, n, run_dir)
        for name, to in (("attempts.jsonl", "eval-%d.attempts.jsonl" % n), ("manifest.json", "eval-%d.manifest.json" % n)):
            if a.runs_dir and os.path.exists(os.path.join(run_dir, name)):
                shutil.copy(os.path.join(run_dir, name), os.path.join(a.out, to))
        if a.runs_dir and os.path.exists(run_dir + ".log"):
            shutil.copy(run_dir + ".log", os.path.join(a.out, "eval-%d.log" % n))
        runs.append(r)
        print("runners %2d: %3d kernels in %6.1f s (exit %d)" % (n, r["kernels"], r["wall_s"], r["exit"]), flush=True)
    print("\n%-8s %8s %9s %14s %16s %10s  %s" % ("runners", "kernels", "wall s", "check ms mean",
                                                 "check ms median", "kernels/s", "outcomes"))
    for r in runs:
        print("%-8d %8d %9.1f %14.0f %16.0f %10.2f  %s" % (
            r["runners"], r["kernels"], r["wall_s"], r["check_ms_mean"], r["check_ms_median"], r["kernels_per_s"],
            ", ".join("%s %d" % kv for kv in r["outcomes"].items())))
    for r in runs:
        for line in r["tritonbench"]:
            print("  [%d runners] %s" % (r["runners"], line.strip()))
    differ = []
    base = runs[0]["verdicts"]
    if a.compare_with:  # an earlier call's JSON (another runner count, under the 10-minute limit)
        with open(a.compare_with) as f:
            earlier = json.load(f)["runs"][0]
        runs_cmp = [earlier] + runs
        base = earlier["verdicts"]
    else:
        runs_cmp = runs
    for r in runs_cmp[1:]:
        for task in sorted(set(base) | set(r["verdicts"])):
            if base.get(task) != r["verdicts"].get(task):
                differ.append("%s: %s with %d runner(s), %s with %d" % (
                    task, base.get(task), runs_cmp[0]["runners"], r["verdicts"].get(task), r["runners"]))
    for d in differ:
        print("DIFFERENT VERDICT " + d)
    if not differ and len(runs_cmp) > 1:
        print("same verdicts for every kernel with %s runners" % ", ".join(str(r["runners"]) for r in runs_cmp))
    print("timed locks: %s" % ", ".join(sorted({l for r in runs for l in r["timed_locks"]})))
    if len(runs) > 1 and runs[-1]["wall_s"] > 0:
        print("speed-up %d -> %d runners: %.2fx" % (runs[0]["runners"], runs[-1]["runners"],
                                                     runs[0]["wall_s"] / runs[-1]["wall_s"]))
    path = os.path.join(a.out, "tritonbench-generated-%s.json" % a.runners.replace(",", "-"))
    with open(path, "w") as f:
        json.dump({"prep": a.prep, "limit": a.limit, "runs": runs, "different_verdicts": differ}, f, indent=1)
    print("wrote " + path)
    return 1 if differ else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--checkout", help="a TritonBench checkout")
    g.add_argument("--git-dir", help="a bare git directory of TritonBench (read at HEAD)")
    p.add_argument("--model", default="gpt-4o", help="output_<model>.jsonl (default gpt-4o)")
    p.add_argument("--out", required=True)
    t = sub.add_parser("time")
    t.add_argument("prep", help="a folder `prepare` wrote")
    t.add_argument("--kforge", default="build/agent/kforge")
    t.add_argument("--device", default="cuda:0")
    t.add_argument("--runners", default="1,8", help="runner counts to time, comma-separated (default 1,8)")
    t.add_argument("--jobs", type=int, default=4, help="compiles and scans at once, at least the runners")
    t.add_argument("--limit", type=int, default=0, help="only the first K tasks")
    t.add_argument("--timeout", type=int, default=1800, help="seconds per eval")
    t.add_argument("--out", default="gpu-out/tritonbench-generated")
    t.add_argument("--runs-dir", help="where the eval run directories go (default: --out); --out then gets "
                   "their attempts.jsonl, manifest and log")
    t.add_argument("--compare-with", help="an earlier call's JSON: its first run's verdicts must match")
    a = ap.parse_args(argv)
    if a.step == "prepare":
        prepare(a)
        return 0
    return time_runs(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
