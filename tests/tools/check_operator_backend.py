#!/usr/bin/env python3
"""End to end on the CPU (issue 24): an operator suite through `kforge eval` (triton under Triton's
interpreter), a candidate calling its own operator judged torch_fallback, the run exported with
`kforge library export --as-backend`, and the package used from PyTorch: a small model matches
eager with it enabled, and a watermark build (every kernel writes 7) proves the model's calls route
through it, that disable() and the context manager undo it, and that an operator the library does
not hold falls through.

usage: check_operator_backend.py KFORGE SOURCE_DIR SCRATCH_DIR   (run with the torch/triton venv)
"""
import json
import os
import shutil
import subprocess
import sys

from kforge_check import check, runner

KFORGE, SRC, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
DATA = os.path.join(SRC, "tests", "data", "operators", "e2e")
ENV = dict(os.environ, KFORGE_HOME=SRC)

kforge = runner(KFORGE, ENV)

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
run = os.path.join(OUT, "run")
p = kforge("eval", "--suite", DATA, "--backend", "triton", "--device", "cpu", "--kernels",
           os.path.join(DATA, "kernels"), "--out", run, "--no-bench")
check(p.returncode == 0 and "5/5 passed" in p.stdout, "5 operator kernels pass every case")
p = kforge("eval", "--suite", DATA, "--backend", "triton", "--device", "cpu", "--kernels",
           os.path.join(DATA, "fallback"), "--out", os.path.join(OUT, "fallback"), "--no-bench")
check("torch_fallback" in p.stdout + p.stderr and "0/1 passed" in p.stdout,
      "a kernel calling the operator it implements is torch_fallback")

pkg, wm = os.path.join(OUT, "pkg"), os.path.join(OUT, "wm")
check(kforge("library", "export", run, "--as-backend", pkg).returncode == 0, "export --as-backend")
check(kforge("library", "export", run, "--as-backend", wm, "--watermark", "7").returncode == 0,
      "export --as-backend --watermark 7")
m = json.load(open(os.path.join(pkg, "kforge_backend", "manifest.json")))
check(len(m["operators"]) == 5 and all((e["kind"], e["backend"]) == ("python_module", "triton")
                                       and e["device_type"] in ("cpu", "cuda") for e in m["operators"]),
      "the manifest names each kernel's kind (a Python module), backend and device type")

USE = r'''
import sys, torch
sys.path.insert(0, sys.argv[1])
import kforge_backend as kb
watermark = sys.argv[2] == "1"
torch.manual_seed(0)
x, y = torch.rand(64, 32) - 0.5, torch.rand(64, 32) - 0.5
def model(x, y):
    return torch.add(torch.relu(x) * torch.abs(y), torch.neg(y), alpha=2)
eager = model(x, y)
assert len(kb.MANIFEST["operators"]) == 5, kb.MANIFEST["operators"]
with kb.enabled():
    assert "aten.relu.default" in kb.registered(), kb.registered()
    got = model(x, y)
    other = torch.sigmoid(x)  # not in the library: PyTorch's own
if watermark:
    assert torch.all(got == 7), got
else:
    torch.testing.assert_close(got, eager, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(other, torch.sigmoid(x))
kb.enable(); kb.disable()
torch.testing.assert_close(model(x, y), eager)  # disabled: eager again
print("routed" if watermark else "matches eager")
'''
records = os.path.join(OUT, "verified")
env = dict(os.environ, TRITON_INTERPRET="1", KFORGE_VERIFIED_DIR=records)
env.pop("KFORGE_BACKEND_UNVERIFIED", None)
p = subprocess.run([sys.executable, "-c", USE, pkg, "0"], env=env, capture_output=True, text=True)
check(p.returncode != 0 and "UnverifiedKernel" in p.stderr, "the package refuses kernels no `kforge library verify` recorded")
v = kforge("library", "verify", pkg, "--device", "cpu", "--records", records)
check(v.returncode == 0 and len(os.listdir(records)) == 5, "library verify: 5 kernels judged, 5 records outside the package")
# The watermark build writes 7: it can never pass verify, so it is loaded unverified (documented opt-out).
for d, w, what, e in ((pkg, "0", "the package's kernels match eager on a small model", env),
                      (wm, "1", "watermark: the model's calls route through the package, disable() undoes it",
                       dict(env, KFORGE_BACKEND_UNVERIFIED="1"))):
    p = subprocess.run([sys.executable, "-c", USE, d, w], env=e, capture_output=True, text=True)
    print(p.stdout + p.stderr[-3000:])
    check(p.returncode == 0, what)
# A package written before "kind" named the artifact's kind says "triton" for a Python module:
# still judged; a kind kforge does not know is judged nothing, and the reason names the field.
mf = os.path.join(pkg, "kforge_backend", "manifest.json")
m = json.load(open(mf))
m["operators"][0]["kind"], m["operators"][1]["kind"] = "triton", "bogus"
json.dump(m, open(mf, "w"), indent=2)
v = kforge("library", "verify", pkg, "--device", "cpu", "--records", os.path.join(OUT, "verified-legacy"))
st = [e["verify"] for e in json.load(open(mf))["operators"]]
check(v.returncode == 1 and st[0]["status"] == "ok" and st[1]["status"] == "failing"
      and any('kind "bogus" is not a kernel kind of kforge' in r for r in st[1]["reasons"])
      and all(x["status"] == "ok" for x in st[2:]),
      "library verify: a legacy kind \"triton\" is a Python module; an unknown kind is named and not judged")
print("operator backend: all checks passed")
