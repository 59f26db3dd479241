#!/usr/bin/env python3
"""Library kernels judged on unseen shapes (issue 24 §3), cpu backend, kforge-core's ci profile.

A correct kernel (the gelu_tanh exemplar) and one that hard-codes the shown size (horner_polynomial
with n = 5000, ci's SIZE) both pass `kforge eval`; `kforge library export RUN` judges them again on
profile ci+unseen (SIZE 5007): the first generalises, the second fails there (output_mismatch) and is
marked so in generalisation.json, library/index.json, summary.json and report.md. A second export
reuses the verdicts (judges nothing).

usage: check_generalisation.py KFORGE SOURCE_DIR OUT
"""
import json
import os
import shutil
import subprocess
import sys

kforge, src, out = sys.argv[1:4]


def check(cond, what):
    if not cond:
        print("FAIL: " + what, flush=True)
        sys.exit(1)
    print("ok: " + what, flush=True)


shutil.rmtree(out, ignore_errors=True)
kernels = os.path.join(out, "kernels")
os.makedirs(os.path.join(kernels, "activation", "gelu_tanh"))
os.makedirs(os.path.join(kernels, "math", "horner_polynomial"))
shutil.copy(os.path.join(src, "prompts/exemplars/cpu/activation/gelu_tanh/kernel.cpp"),
            os.path.join(kernels, "activation", "gelu_tanh", "kernel.cpp"))
horner = open(os.path.join(src, "prompts/exemplars/cpu/math/horner_polynomial/kernel.cpp")).read()
hard = horner.replace("const int64_t n = kf_numel(&inputs[0]);", "const int64_t n = 5000;  // the size the prompt showed")
hard = hard.replace("kf_numel(&outputs[0]) != n", "kf_numel(&outputs[0]) < n")
check(hard != horner and "5000" in hard, "a horner kernel hard-coding the shown SIZE")
open(os.path.join(kernels, "math", "horner_polynomial", "kernel.cpp"), "w").write(hard)
run = os.path.join(out, "run")
e = subprocess.run([kforge, "eval", "--suite", "kforge-core", "--profile", "ci", "--backend", "cpu", "--kernels",
                    kernels, "--out", run, "--no-bench"], capture_output=True, text=True)
print(e.stdout[-3000:] + e.stderr[-2000:])
recs = [json.loads(l) for l in open(os.path.join(run, "attempts.jsonl"))]
check(e.returncode == 0 and len(recs) == 2 and all(r["outcome"] == "pass" for r in recs),
      "both kernels pass on the shown shapes (ci)")

x = subprocess.run([kforge, "library", "export", run], capture_output=True, text=True)
print(x.stdout[-4000:] + x.stderr[-2000:])
check(x.returncode == 0 and "judging 2 library kernel(s) on unseen shapes (ci+unseen)" in x.stdout,
      "kforge library export judges both on ci+unseen")
g = json.load(open(os.path.join(run, "generalisation.json")))
k = g["kernels"]
check(k["activation/gelu_tanh"]["generalises"] is True and "COLS 257->264" in k["activation/gelu_tanh"]["unseen"],
      "gelu_tanh generalises (%s)" % k["activation/gelu_tanh"]["unseen"])
check(k["math/horner_polynomial"]["generalises"] is False
      and k["math/horner_polynomial"]["outcome"] == "output_mismatch"
      and "SIZE 5000->5007" in k["math/horner_polynomial"]["unseen"],
      "the hard-coded horner does not generalise: %s" % k["math/horner_polynomial"]["reason"])
idx = {e["task"]: e for e in json.load(open(os.path.join(run, "library", "index.json")))}
check(idx["activation/gelu_tanh"]["generalises"] is True and idx["math/horner_polynomial"]["generalises"] is False
      and "output_mismatch" in idx["math/horner_polynomial"]["generalisation"],
      "library/index.json says which kernels generalise, and why not")
check(os.path.isfile(os.path.join(run, "library", "math", "horner_polynomial", "kernel.cpp")),
      "the library holds eval's kernels too (their build/ copy)")
summary = json.load(open(os.path.join(run, "summary.json")))
check(summary["generalisation"]["math/horner_polynomial"]["generalises"] is False, "summary.json (report.html's data)")
report = open(os.path.join(run, "report.md")).read()
check("## Library: generalisation" in report and "| math/horner_polynomial | cpu | no |" in report
      and "| activation/gelu_tanh | cpu | yes |" in report, "report.md's library section")
check("Library: generalisation" in open(os.path.join(run, "report.html")).read(), "report.html's library section")
again = subprocess.run([kforge, "library", "export", run], capture_output=True, text=True)
check(again.returncode == 0 and "judging" not in again.stdout and "(0 judged now)" in again.stdout,
      "a second export reuses the verdicts")
print("generalisation: all checks passed")
