# Adversarial Triton candidate, unscanned (issue 21 §2, warm hosts forked from one zygote): it
# tries to leave state behind for the next candidate the same runner judges, and it looks for
# what an earlier candidate (an earlier instance of itself) left. Finding anything, kf_forward
# returns zeros (the check fails: output_mismatch); finding nothing, it leaves its marks
# everywhere it can reach from Python (modules, builtins, sys.modules, torch's and numpy's
# global state, the environment, the umask, a signal handler, Triton's jit, and on a GPU a
# file in its scratch directory and one in Triton's shared cache) and computes correctly. Judged
# twice in a row by one runner, it passes both times only if nothing of the first reached the
# second: hosts forked from a zygote must be as fresh as spawned ones.
import builtins
import os
import signal
import sys
import tempfile

import numpy
import torch
import triton
import triton.language as tl

MARK = "kforge_leftover"
SEED = 4242


def file_marks():
    """On a GPU: this host's scratch directory (its own, fresh) and Triton's cache (shared by
    the runner's hosts, readable, not writable)."""
    dirs = [os.environ.get("KFORGE_TRITON_SCRATCH", ""), os.environ.get("TRITON_CACHE_DIR", "")]
    return [os.path.join(d, MARK) for d in dirs if d and os.environ.get("KFORGE_TRITON_SCRATCH")]


def leftovers():
    found = []
    for name, holder in (("torch", torch), ("triton", triton), ("builtins", builtins), ("torch.Tensor", torch.Tensor),
                         ("triton.jit", triton.jit), ("tempfile", tempfile), ("os", os)):
        if hasattr(holder, MARK):
            found.append(name)
    if MARK in sys.modules:
        found.append("sys.modules")
    if os.environ.get("KFORGE_LEFTOVER"):
        found.append("environment")
    if torch.get_default_dtype() != torch.float32:
        found.append("torch default dtype")
    if torch.initial_seed() == SEED:
        found.append("torch seed")
    if torch.get_float32_matmul_precision() != "highest":
        found.append("torch matmul precision")
    if numpy.random.get_state()[1][0] == numpy.random.RandomState(SEED).get_state()[1][0]:
        found.append("numpy seed")
    if sys.getrecursionlimit() == SEED:
        found.append("recursion limit")
    if sys.path and sys.path[0] == "/" + MARK:
        found.append("sys.path")
    old = os.umask(0o022)
    os.umask(old)
    if old == 0o047:
        found.append("umask")
    if callable(signal.getsignal(signal.SIGUSR2)):
        found.append("signal handler")
    found += [p for p in file_marks() if os.path.exists(p)]
    return found


def leave_marks():
    for holder in (torch, triton, builtins, torch.Tensor, triton.jit, tempfile, os):
        setattr(holder, MARK, True)
    sys.modules[MARK] = sys.modules[__name__] if __name__ in sys.modules else tempfile
    os.environ["KFORGE_LEFTOVER"] = "1"
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(SEED)
    torch.set_float32_matmul_precision("medium")
    numpy.random.seed(SEED)
    sys.setrecursionlimit(SEED)
    sys.path.insert(0, "/" + MARK)
    os.umask(0o047)
    signal.signal(signal.SIGUSR2, lambda *_: None)
    for path in file_marks():
        try:
            with open(path, "w") as f:
                f.write("left by an earlier candidate\n")
        except OSError:
            pass  # Triton's shared cache is not writable (Landlock)


FOUND = leftovers()
if not FOUND:
    leave_marks()


@triton.jit
def relu2_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * 2.0 + y, mask=mask)


def kf_forward(x, y):
    out = torch.empty_like(x)
    if FOUND:
        print("leaves_state: found what an earlier candidate left:", ", ".join(FOUND))
        return out.zero_()
    n = out.numel()
    relu2_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
