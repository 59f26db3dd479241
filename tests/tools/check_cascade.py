"""No cascades (issue 21 section 1): `kforge eval` of tests/data/cascade_suite with the cpu
exemplars, and the records it leaves. The suite's second task's reference breaks the judge's
interpreter (it replaces nn.Module.__call__, then raises); its fourth calls os._exit. Every
other task must still be judged and pass, the two broken ones must be listed once in
unusable.json with a one-line reason (the exception, not "Traceback (most recent call last):"),
and their attempt directories must hold the whole traceback.

usage: check_cascade.py KFORGE SOURCE_DIR OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def fail(msg, out=""):
    print("FAIL: " + msg)
    if out:
        print(out[-4000:])
    sys.exit(1)


def main():
    kforge, src, out = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    suite = os.path.join(src, "tests/data/cascade_suite")
    kernels = os.path.join(src, "tests/data/cascade_kernels")  # the suite's own tasks: an eval folder naming no task is an error
    p = subprocess.run([kforge, "eval", "--suite", suite, "--profile", "ci", "--backend", "cpu", "--kernels",
                        kernels, "--out", out, "--reps", "5", "--profiler", "none"],
                       capture_output=True, text=True, timeout=1200)
    log = p.stdout + p.stderr
    if p.returncode != 76:  # kExitInfraError: two attempts could not be judged
        fail("kforge eval exited %d (expected 76: two unusable references)" % p.returncode, log)
    records = {}
    with open(os.path.join(out, "attempts.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            records[r["task"]] = r
    expected_pass = ["activation/gelu_tanh", "fusion/add_layernorm", "normalization/layer_norm"]
    broken = {"broadcast/film_modulation": "RuntimeError: this reference breaks the worker's torch",
              "convolution/depthwise_conv2d_5x5": "exited with status 3"}
    for t in expected_pass:
        if t not in records:
            fail("no record for " + t, log)
        if records[t]["outcome"] != "pass":
            fail("%s: %s/%s (%s): a task after a broken reference was not judged on a fresh worker"
                 % (t, records[t]["outcome"], records[t].get("sub_kind"), records[t].get("message")), log)
    with open(os.path.join(out, "unusable.json")) as f:
        unusable = json.load(f)
    if sorted(unusable) != sorted(broken):
        fail("unusable.json lists %s, expected %s" % (sorted(unusable), sorted(broken)), log)
    for t, needle in broken.items():
        r = records.get(t)
        if not r or r["outcome"] != "infra_error" or r.get("sub_kind") != "reference_failed":
            fail("%s: expected infra_error/reference_failed, got %s" % (t, r), log)
        for what, text in (("record message", r.get("message", "")), ("unusable.json", unusable[t])):
            if "Traceback (most recent call last)" in text or needle not in text or "\n" in text:
                fail("%s: %s is %r; expected one line naming %r" % (t, what, text, needle), log)
        with open(os.path.join(out, r["attempt_dir"], "result.json")) as f:
            result = json.load(f)
        if t == "broadcast/film_modulation" and "Traceback (most recent call last)" not in result.get("traceback", ""):
            fail("%s: the attempt directory's result.json holds no traceback: %r" % (t, result), log)
    if "2 task(s) unusable" not in log:
        fail("eval did not say how many tasks are unusable", log)
    print("cascade: %d tasks passed after broken references; unusable: %s"
          % (len(expected_pass), ", ".join("%s (%s)" % kv for kv in sorted(unusable.items()))))


if __name__ == "__main__":
    main()
