"""`kforge eval --devices` (issue 21 section 3): several runners on one device give the same verdicts
as one, their checks run side by side and their timed work never overlaps.

Runs `kforge eval ARGS --device D` and `kforge eval ARGS --devices D,D,...` (N runners) into two run
directories, the second with KFORGE_TIMED_LOG set (backends/timed_lock.hpp: every hold of a
device's timed lock, and every check the client sent, as "<kind> <name> <pid> <begin_ns> <end_ns>"),
and a private KFORGE_LOCK_DIR. Compares the verdicts task by task (check_eval_jobs.py's), then
reads the log: no two timed intervals (bench, calibration, peaks, ncu) on one lock overlap, no
shared hold (a check, a load) overlaps a timed one, every bench was logged, and checks of different runners overlapped at least MIN_OVERLAP times.

usage: check_eval_devices.py OUT_DIR DEVICE N MIN_OVERLAP -- KFORGE eval ARGS...
Prints "eval --devices DEVICE x N: same verdicts for T tasks; K timed intervals never overlap; C
overlapping check pairs".
"""
import itertools
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_eval_jobs import verdicts_of  # noqa: E402


def judge(cmd, out, extra, env):
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(cmd + ["--out", out] + extra, capture_output=True, text=True, timeout=1500, env=env)
    v, u = verdicts_of(out)
    return p, v, u


def read_log(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                kind, name, pid, b, e = line.split()
                rows.append((kind, name, int(pid), int(b), int(e)))
    return rows


def overlaps(a, b):
    return a[3] < b[4] and b[3] < a[4]


def main():
    args = sys.argv[1:]
    split = args.index("--")
    out, device, n, min_overlap = args[0], args[1], int(args[2]), int(args[3])
    cmd = args[split + 1:]
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    env["KFORGE_LOCK_DIR"] = os.path.join(os.path.abspath(out), "locks")
    shutil.rmtree(env["KFORGE_LOCK_DIR"], ignore_errors=True)
    p1, v1, u1 = judge(cmd, os.path.join(out, "one"), ["--device", device], env)
    log = os.path.join(os.path.abspath(out), "timed.log")
    if os.path.exists(log):
        os.remove(log)
    env["KFORGE_TIMED_LOG"] = log
    pn, vn, un = judge(cmd, os.path.join(out, "many"), ["--devices", ",".join([device] * n), "--jobs", str(n)], env)
    text = p1.stdout + p1.stderr + "\n----\n" + pn.stdout + pn.stderr
    bad = []
    if len(v1) < 2:
        bad.append("only %d task(s) judged with --device %s" % (len(v1), device))
    if p1.returncode != pn.returncode:
        bad.append("exit status %d with one runner, %d with %d" % (p1.returncode, pn.returncode, n))
    for t in sorted(set(v1) | set(vn)):
        if v1.get(t) != vn.get(t):
            bad.append("%s: %s with one runner, %s with %d" % (t, v1.get(t), vn.get(t), n))
    if u1 != un:
        bad.append("unusable: %s with one runner, %s with %d" % (u1, un, n))
    rows = read_log(log)
    timed = [r for r in rows if r[0].startswith("timed:")]
    checks = [r for r in rows if r[0] == "check"]
    shared = [r for r in rows if r[0].startswith("shared:")]
    for a, b in itertools.combinations(timed, 2):
        if a[1] == b[1] and overlaps(a, b):
            bad.append("timed work overlapped on %s: %s and %s" % (a[1], a, b))
    for a in timed:  # a check, a load, a reference's runs: never inside timed work
        for b in shared:
            if a[1] == b[1] and overlaps(a, b):
                bad.append("untimed work overlapped timed work on %s: %s and %s" % (a[1], a, b))
    if not shared:
        bad.append("no check held the device's lock shared")
    benches = sum(1 for r in timed if r[0] == "timed:bench")
    passed = sum(1 for v in vn.values() if v[0] == "pass")
    if "--no-bench" not in cmd and benches < passed:
        bad.append("%d bench(es) logged for %d pass(es)" % (benches, passed))
    runners = {r[2] for r in checks}
    if len(runners) < min(n, 2) and min_overlap > 0:
        bad.append("checks ran on %d runner(s) of %d" % (len(runners), n))
    pairs = sum(1 for a, b in itertools.combinations(checks, 2) if a[2] != b[2] and overlaps(a, b))
    if pairs < min_overlap:
        bad.append("%d overlapping check pair(s) of different runners, expected at least %d" % (pairs, min_overlap))
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad) + "\n" + text[-6000:])
        sys.exit(1)
    print(", ".join(sorted("%s=%s" % (t, v[0]) for t, v in v1.items())))
    print("eval --devices %s x %d: same verdicts for %d tasks; %d timed intervals never overlap each other or %d "
          "shared holds; %d overlapping check pairs" % (device, n, len(v1), len(timed), len(shared), pairs))


if __name__ == "__main__":
    main()
