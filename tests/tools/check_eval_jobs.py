"""`kforge eval --jobs` (issue 21 section 3): the same kernels judged with one compile at a time and
with several give the same verdicts. Runs `kforge eval ARGS --jobs 1` and `--jobs N` into two run
directories and compares, task by task, what the judge decided (outcome, sub-kind, trials passed,
the kernel's hash), the tasks listed in unusable.json and the exit status. Timings and the order
of attempts.jsonl may differ (each task has one record per invocation; readers key by task).

usage: check_eval_jobs.py OUT_DIR N -- KFORGE eval ARGS...   (--out and --jobs are appended)
Prints "eval --jobs N: same verdicts for T tasks".
"""
import json
import os
import shutil
import subprocess
import sys


def verdicts_of(out):
    """What the judge decided per task in run directory `out`, and its unusable tasks."""
    verdicts = {}
    with open(os.path.join(out, "attempts.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            verdicts[r["task"]] = (r["outcome"], r.get("sub_kind", ""), r.get("trials_passed"), r.get("source_sha"))
    with open(os.path.join(out, "unusable.json")) as f:
        unusable = sorted(json.load(f))
    return verdicts, unusable


def judge(cmd, out, jobs):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(cmd + ["--out", out, "--jobs", str(jobs)], capture_output=True, text=True, timeout=1500)
    verdicts, unusable = verdicts_of(out)
    return p, verdicts, unusable


def main():
    args = sys.argv[1:]
    split = args.index("--")
    out, jobs, cmd = args[0], int(args[1]), args[split + 1:]
    p1, v1, u1 = judge(cmd, os.path.join(out, "jobs1"), 1)
    pn, vn, un = judge(cmd, os.path.join(out, "jobs%d" % jobs), jobs)
    log = p1.stdout + p1.stderr + "\n----\n" + pn.stdout + pn.stderr
    bad = []
    if len(v1) < 2:
        bad.append("only %d task(s) judged with --jobs 1" % len(v1))
    if p1.returncode != pn.returncode:
        bad.append("exit status %d with --jobs 1, %d with --jobs %d" % (p1.returncode, pn.returncode, jobs))
    for t in sorted(set(v1) | set(vn)):
        if v1.get(t) != vn.get(t):
            bad.append("%s: %s with --jobs 1, %s with --jobs %d" % (t, v1.get(t), vn.get(t), jobs))
    if u1 != un:
        bad.append("unusable: %s with --jobs 1, %s with --jobs %d" % (u1, un, jobs))
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad) + "\n" + log[-6000:])
        sys.exit(1)
    outcomes = sorted("%s=%s" % (t, v[0]) for t, v in v1.items())
    print(", ".join(outcomes))
    print("eval --jobs %d: same verdicts for %d tasks" % (jobs, len(v1)))


if __name__ == "__main__":
    main()
