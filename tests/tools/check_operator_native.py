#!/usr/bin/env python3
"""Operator tasks on the cpu backend (issue 24): C++ `<op>_kernel_impl` candidates (kernel_abi.h's
operator entry) judged by `kforge eval` through kforge's C++ adapter (one kf_forward calling the
entry on every case), the run exported with `kforge library export --as-backend` (the judged shared
objects, loaded by the package through ctypes), and the package used from PyTorch: relu and add
(strided and broadcast inputs, alpha) match eager with it enabled, and calls route through it. The
mul kernel hard-codes the shown shape: it passes the task, does not generalise, and is left out.

Verification (issue 38 §2.2): the package refuses to load a kernel `kforge library verify` has
not recorded (outside the package, in KFORGE_VERIFIED_DIR); verify judges the exported shared
objects as they are; a swapped .so with the manifest's hashes edited to match is refused by the
loader and fails verify; an edited loader is refused by verify. The confined mode (§2.3) runs
the kernels in kforge-host: they match eager and are never mapped into the user's process.

usage: check_operator_native.py KFORGE SOURCE_DIR SCRATCH_DIR [cuda]   (run with the torch venv)
With `cuda` (a GPU): the same with tests/data/operators/e2e/cuda's kernels on cuda:0.
"""
import json
import os
import shutil
import subprocess
import sys

from kforge_check import check, runner

KFORGE, SRC, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
BACKEND = sys.argv[4] if len(sys.argv) > 4 else "cpu"
DEVICE = "cuda:0" if BACKEND == "cuda" else "cpu"
EXT = ".cu" if BACKEND == "cuda" else ".cpp"
DATA = os.path.join(SRC, "tests", "data", "operators", "e2e")
RECORDS = os.path.join(OUT, "verified")
ENV = dict(os.environ, KFORGE_HOME=SRC, KFORGE_VERIFIED_DIR=RECORDS)
ENV.pop("KFORGE_BACKEND_UNVERIFIED", None)

kforge = runner(KFORGE, ENV, stdout_tail=4000, stderr_tail=3000)

shutil.rmtree(OUT, ignore_errors=True)
os.makedirs(OUT)
run = os.path.join(OUT, "run")
p = kforge("eval", "--suite", DATA, "--backend", BACKEND, "--device", DEVICE, "--kernels", os.path.join(DATA, BACKEND),
           "--out", run, "--no-bench")
recs = {json.loads(l)["task"]: json.loads(l) for l in open(os.path.join(run, "attempts.jsonl"))}
check(p.returncode == 0 and sorted(recs) == ["aten.add.Tensor", "aten.mul.Tensor", "aten.relu.default"]
      and all(r["outcome"] == "pass" for r in recs.values()),
      "3 C++ operator kernels pass every case through the cpu backend's adapter")
built = open(os.path.join(run, "attempts", "aten.add.Tensor", "0", "1", "build", "kernel" + EXT)).read()
check("KF_ARG_INT, 0, 2LL" in built and "add_kernel_impl(t, 2, outputs + 1 * per" in built,
      "the adapter passes case 1's alpha=2 as a kf_arg and its slice of the outputs")

# A candidate whose macro would point kforge's adapter at another function than the entry it
# exports (the judge would pass a good function while the package calls one that writes nothing):
# the adapter undefines every name it uses, so the entry itself is judged.
relu = open(os.path.join(DATA, BACKEND, "aten.relu.default", "kernel" + EXT)).read()
trick = relu.replace("relu_kernel_impl", "relu_good") + """
extern "C" int relu_kernel_impl(const kf_tensor*, int, kf_tensor*, int, const kf_arg*, int, void*) {
  return 0;  // writes nothing
}
#define relu_kernel_impl relu_good
"""
tk = os.path.join(OUT, "trick", "aten.relu.default")
os.makedirs(tk)
open(os.path.join(tk, "kernel" + EXT), "w").write(trick)
p = kforge("eval", "--suite", DATA, "--backend", BACKEND, "--device", DEVICE, "--kernels", os.path.dirname(tk), "--out",
           os.path.join(OUT, "trick-run"), "--no-bench")
r = json.loads(open(os.path.join(OUT, "trick-run", "attempts.jsonl")).readline())
check(r["outcome"] == "output_mismatch", "a macro cannot redirect the adapter to another function (%s)" % r["outcome"])

pkg = os.path.join(OUT, "pkg")
p = kforge("library", "export", run, "--as-backend", pkg)
check(p.returncode == 0 and "2 operator kernel(s)" in p.stdout
      and "skipped aten.mul.Tensor: does not generalise" in p.stderr,
      "export: relu and add generalise and are exported; the hard-coded mul is left out")
m = json.load(open(os.path.join(pkg, "kforge_backend", "manifest.json")))
kinds = {e["operator"]: (e["kind"], e["kernel_file"], e["source_file"]) for e in m["operators"]}
check(kinds == {"aten.relu.default": ("shared_object", "kernels/aten.relu.default.so", "kernels/aten.relu.default" + EXT),
                "aten.add.Tensor": ("shared_object", "kernels/aten.add.Tensor.so", "kernels/aten.add.Tensor" + EXT)}
      and m["dispatch_key"] == ("CUDA" if BACKEND == "cuda" else "CPU")
      and all((e["backend"], e["device_type"]) == (BACKEND, "cuda" if BACKEND == "cuda" else "cpu") for e in m["operators"]),
      "the manifest names each shared object, its source, backend and device type")

USE = r'''
import sys, torch
sys.path.insert(0, sys.argv[1])
import kforge_backend as kb
torch.manual_seed(0)
d, confined = sys.argv[2], sys.argv[3] == "1"
x = torch.randn(33, 70, device=d)
xt = torch.randn(70, 33, device=d).t()          # a strided view
a, b = torch.randn(5, 19, 23, device=d), torch.randn(23, device=d)
want = [torch.relu(x), torch.relu(xt), torch.add(a, b, alpha=0.5), a + b, torch.mul(a, b)]
with kb.enabled(count=True, confined=confined):
    got = [torch.relu(x), torch.relu(xt), torch.add(a, b, alpha=0.5), a + b, torch.mul(a, b)]
    calls = kb.calls()
for g, w in zip(got, want):
    torch.testing.assert_close(g, w)
assert calls.get("aten.relu.default") == 2 and calls.get("aten.add.Tensor") == 2, calls
assert "aten.mul.Tensor" not in calls, calls
mapped = "memfd:aten.relu.default" in open("/proc/self/maps").read()
assert mapped != confined, "the kernel is %smapped into this process" % ("" if mapped else "not ")
print("native package%s: relu and add match eager on unseen, strided and broadcast inputs; calls routed" %
      (" (confined: kforge-host ran them, nothing mapped here)" if confined else ""), calls)
'''
HOST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(KFORGE))), "backends", "host", "kforge-host")
PENV = dict(os.environ, KFORGE_VERIFIED_DIR=RECORDS, KFORGE_HOME=SRC, KFORGE_HOST=HOST)
PENV.pop("KFORGE_BACKEND_UNVERIFIED", None)


def use(confined="0"):
    c = subprocess.run([sys.executable, "-c", USE, pkg, DEVICE, confined], env=PENV, capture_output=True, text=True)
    print(c.stdout + c.stderr[-3000:])
    return c


c = use()
check(c.returncode != 0 and "UnverifiedKernel" in c.stderr and "no record of `kforge library verify`" in c.stderr,
      "before `kforge library verify` the package refuses to load its kernels (UnverifiedKernel)")
v = kforge("library", "verify", pkg, "--device", DEVICE)
m = json.load(open(os.path.join(pkg, "kforge_backend", "manifest.json")))
records = sorted(os.listdir(RECORDS))
check(v.returncode == 0 and all(e["verify"]["status"] == "ok" for e in m["operators"])
      and records == sorted("%s.%s.json" % (e["kernel_sha256"], e["operator"]) for e in m["operators"])
      and all(os.stat(os.path.join(RECORDS, r)).st_mode & 0o777 == 0o444 for r in records)
      and not os.path.exists(os.path.join(pkg, ".kforge-verify", "kernels")),
      "library verify: both shared objects judged as exported (no rebuild), one 0444 record each outside the package")
run_rec = {r["task"]: r for r in map(json.loads, open(os.path.join(run, "attempts.jsonl")))}
check(all(e["kernel_sha256"] == run_rec[e["operator"]]["artifact_sha256"] for e in m["operators"]),
      "the exported shared objects are the judged artifacts (SHA-256 of the run's attempt record)")
check(use().returncode == 0, "verified: the package's shared objects run from PyTorch and match eager")
if BACKEND == "cpu":
    check(use("1").returncode == 0, "confined mode: the kernels run in kforge-host and match eager")

# The attack: relu's shared object swapped for another (add's), the manifest's hashes edited to match.
kdir = os.path.join(pkg, "kforge_backend", "kernels")
mf = os.path.join(pkg, "kforge_backend", "manifest.json")
shutil.copy(os.path.join(kdir, "aten.add.Tensor.so"), os.path.join(kdir, "aten.relu.default.so"))
m = json.load(open(mf))
for e in m["operators"]:
    if e["operator"] == "aten.relu.default":
        e["kernel_sha256"] = [x for x in m["operators"] if x["operator"] == "aten.add.Tensor"][0]["kernel_sha256"]
json.dump(m, open(mf, "w"), indent=2)
c = use()
check(c.returncode != 0 and "UnverifiedKernel" in c.stderr and "aten.relu.default.so: no record" in c.stderr,
      "a swapped shared object (manifest edited to match) is refused by the loader: no record for relu")
v = kforge("library", "verify", pkg, "--device", DEVICE)
m = {e["operator"]: e for e in json.load(open(mf))["operators"]}
check(v.returncode == 1 and m["aten.relu.default"]["verify"]["status"] == "failing"
      and m["aten.add.Tensor"]["verify"]["status"] == "ok",
      "library verify judges the swapped shared object itself: failing (%s), exit 1"
      % m["aten.relu.default"]["verify"]["outcome"])
c = use()
check(c.returncode != 0 and "AssertionError: {'aten.add.Tensor': 2}" in c.stderr,
      "after verify, the swapped relu is not loaded (PyTorch's own runs it): only add routes to the package")

# An edited loader: verify refuses to record anything.
init = os.path.join(pkg, "kforge_backend", "__init__.py")
open(init, "a").write("\n# edited after export\n")
v = kforge("library", "verify", pkg, "--device", DEVICE)
m = {e["operator"]: e for e in json.load(open(mf))["operators"]}
check(v.returncode == 1 and m["aten.add.Tensor"]["verify"]["status"] == "changed"
      and not os.path.exists(os.path.join(RECORDS, "%s.aten.add.Tensor.json" % m["aten.add.Tensor"]["kernel_sha256"])),
      "library verify: an edited loader (__init__.py) marks every kernel changed and removes its record")
print("operator native: all checks passed")
