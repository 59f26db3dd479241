#!/usr/bin/env python3
"""Two unchanged PyTorch models on an exported kforge backend package vs eager (issue 24).

  backend_e2e.py DIR [--watermark WM_DIR] [--device cpu|cuda] [--ci] [--dtype float32|float16]
                 [--reps N] [--json OUT.json]

DIR is `kforge library export RUN --as-backend DIR`. A small pre-LayerNorm transformer block
(LayerNorm, attention with softmax, GELU MLP, residual adds) and a small CNN (convolutions, ReLU,
SiLU, residual add, global mean, linear) run under torch.inference_mode() with the library
disabled (eager) and enabled; the script checks:
  - the outputs match eager (BackendBench's tolerance, atol = rtol = 1e-2);
  - routing: with enable(count=True) every call routed to the library is counted, and compared
    with the ATen calls the model makes (a TorchDispatchMode log of eager): at least one call per
    model must route, and every call to an overload the library holds must route;
  - with --watermark (an export with --watermark V) the outputs differ from eager (V everywhere
    where the last op routes): the calls really run the package's kernels;
and reports eager and library times (median of --reps calls after warm-up) and the end-to-end
speedup. On the CPU the kernels run under Triton's interpreter (TRITON_INTERPRET=1, set here):
correct but slow, so --ci keeps shapes tiny and the times say nothing about GPU speed.
Exit 0 when every check passes, 1 otherwise (the failing check is named).
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--watermark", default="", help="a watermark export of the same run")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ci", action="store_true", help="tiny shapes (the CPU, under Triton's interpreter)")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    ap.add_argument("--reps", type=int, default=0, help="timed calls (default: 3 with --ci, 50 otherwise)")
    ap.add_argument("--json", default="", help="write the numbers here")
    return ap.parse_args()


ARGS = parse()
if ARGS.device == "cpu":
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (by the package's kernels)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


def load_package(where, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(where, "kforge_backend", "__init__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Block(torch.nn.Module):
    """A pre-LayerNorm transformer block (GPT-2 style), attention written out."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / (d // h) ** 0.5), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class SmallCNN(torch.nn.Module):
    """Convolutions with ReLU and SiLU, a residual add, a global mean and a linear head."""

    def __init__(self, c, classes=10):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, c, 3, padding=1)
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.head = torch.nn.Linear(c, classes)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = F.silu(self.conv1(x))
        x = torch.relu(x + self.conv2(y))
        return self.head(x.mean(dim=(2, 3)))


def models(device, dtype, ci):
    torch.manual_seed(0)
    if ci:
        block, xb = Block(32, 2), torch.randn(1, 8, 32)
        cnn, xc = SmallCNN(8), torch.randn(1, 3, 8, 8)
    else:
        block, xb = Block(768, 12), torch.randn(8, 512, 768)
        cnn, xc = SmallCNN(64), torch.randn(16, 3, 128, 128)
    out = []
    for name, m, x in (("transformer_block", block, xb), ("small_cnn", cnn, xc)):
        out.append((name, m.to(device=device, dtype=dtype).eval(), x.to(device=device, dtype=dtype)))
    return out


class AtenLog(TorchDispatchMode):
    """Counts the ATen overloads a model calls (as the backend-select dispatch sees them)."""

    def __init__(self):
        super().__init__()
        self.calls = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = "aten." + func._schema.name.split("::", 1)[1] + "." + (func._overloadname or "default")
        self.calls[name] = self.calls.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def timed(fn, reps, device):
    def sync():
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


FAILED = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILED.append(what)


def run_model(kb, wm, name, model, x, reps, device):
    with torch.inference_mode():
        eager = model(x)
        log = AtenLog()
        with log:
            model(x)
        kb.reset_calls()
        with kb.enabled(count=True):
            held = set(kb.registered())
            model(x)
            routed = kb.calls()
        with kb.enabled():
            mine = model(x)
        err = (mine.float() - eager.float()).abs().max().item()
        check(torch.allclose(mine.float(), eager.float(), atol=1e-2, rtol=1e-2),
              "%s: matches eager with the library enabled (max abs error %.3g)" % (name, err))
        total = sum(log.calls.values())
        n_routed = sum(routed.values())
        expected = {op: n for op, n in log.calls.items() if op in held}
        check(n_routed > 0, "%s: %d of the model's %d ATen calls route to the library %s" %
              (name, n_routed, total, json.dumps(routed, sort_keys=True)))
        missing = {op: n for op, n in expected.items() if routed.get(op, 0) != n}
        check(not missing, "%s: every call to an overload the library holds routes there%s" %
              (name, "" if not missing else " (not: %s)" % missing))
        if wm is not None:
            with wm.enabled():
                marked = model(x)
            check(not torch.allclose(marked.float(), eager.float()),
                  "%s: watermark build changes the output (calls run the package's kernels)" % name)
        t_eager = timed(lambda: model(x), reps, device)
        with kb.enabled():
            t_lib = timed(lambda: model(x), reps, device)
    return {"model": name, "eager_ms": t_eager, "library_ms": t_lib, "speedup": t_eager / t_lib,
            "aten_calls": total, "routed_calls": n_routed, "routed": routed, "max_abs_err": err,
            "not_in_library": sorted(op for op in log.calls if op not in held)}


def main():
    kb = load_package(ARGS.dir, "kforge_backend_e2e")
    wm = load_package(ARGS.watermark, "kforge_backend_e2e_wm") if ARGS.watermark else None
    if ARGS.device.startswith("cuda") and kb.MANIFEST["dispatch_key"] != "CUDA":
        print("note: the package was judged on %s; registering for CUDA anyway" % kb.MANIFEST["device"])
    reps = ARGS.reps or (3 if ARGS.ci else 50)
    dtype = getattr(torch, ARGS.dtype)
    key = "CUDA" if ARGS.device.startswith("cuda") else "CPU"
    results = []
    for name, model, x in models(ARGS.device, dtype, ARGS.ci):
        # The package registers for the manifest's key; the models run on ARGS.device.
        kb.MANIFEST["dispatch_key"] = key
        if wm is not None:
            wm.MANIFEST["dispatch_key"] = key
        results.append(run_model(kb, wm, name, model, x, reps, ARGS.device))
    print("\n%-18s %10s %12s %8s %14s" % ("model", "eager ms", "library ms", "speedup", "routed/aten*"))
    for r in results:
        print("%-18s %10.3f %12.3f %7.2fx %7d/%-6d" % (r["model"], r["eager_ms"], r["library_ms"], r["speedup"],
                                                     r["routed_calls"], r["aten_calls"]))
    for r in results:
        print("%s: overloads not in the library: %s" % (r["model"], ", ".join(r["not_in_library"])))
    print("* ATen calls as a TorchDispatchMode sees them, composite ones (linear, layer_norm, softmax.int) included")
    if ARGS.device == "cpu":
        print("(CPU: the library's kernels ran under Triton's interpreter; times are not GPU speedups)")
    if ARGS.json:
        json.dump({"device": ARGS.device, "dtype": ARGS.dtype, "ci": ARGS.ci, "results": results},
                  open(ARGS.json, "w"), indent=2)
    print("backend e2e: %s" % ("all checks passed" if not FAILED else "%d check(s) failed" % len(FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
