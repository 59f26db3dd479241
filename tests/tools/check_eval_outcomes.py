"""Runs `kforge eval ...` and checks each task's recorded outcome (and, for a mismatch, words of
its message) in attempts.jsonl.

usage: check_eval_outcomes.py OUT_DIR TASK=OUTCOME[:WORDS] ... [unusable=TASK,...] -- KFORGE eval ARGS...
(--out OUT_DIR is appended; OUT_DIR is removed first). `unusable=`: the tasks unusable.json must
list, each once ("unusable=" alone: none). Prints "outcomes as expected: N tasks".
"""
import json
import os
import shutil
import subprocess
import sys


def main():
    args = sys.argv[1:]
    split = args.index("--")
    out, expects, cmd = args[0], args[1:split], args[split + 1:]
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(cmd + ["--out", out], capture_output=True, text=True, timeout=1500)
    log = p.stdout + p.stderr
    records = {}
    path = os.path.join(out, "attempts.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                records[r["task"]] = r
    bad = []
    for e in [e for e in expects if e.startswith("unusable=")]:
        want = sorted(t for t in e.split("=", 1)[1].split(",") if t)
        path = os.path.join(out, "unusable.json")
        got = sorted(json.load(open(path))) if os.path.exists(path) else []
        if got != want:
            bad.append("unusable.json lists %s, expected %s" % (got, want))
    expects = [e for e in expects if not e.startswith("unusable=")]
    for e in expects:
        task, want = e.split("=", 1)
        outcome, _, words = want.partition(":")
        r = records.get(task)
        if r is None:
            bad.append("%s: no record" % task)
        elif r["outcome"] != outcome:
            bad.append("%s: %s/%s (%s), expected %s" % (task, r["outcome"], r.get("sub_kind"), r.get("message"),
                                                         outcome))
        elif words and words not in r.get("message", ""):
            bad.append("%s: message %r lacks %r" % (task, r.get("message"), words))
    if bad:
        print("FAIL (exit %d):\n  %s\n%s" % (p.returncode, "\n  ".join(bad), log[-6000:]))
        sys.exit(1)
    print(log[-2000:])
    print("outcomes as expected: %d tasks" % len(expects))


if __name__ == "__main__":
    main()
