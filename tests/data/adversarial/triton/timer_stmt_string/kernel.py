# Adversarial Triton candidate (issue 38 §2.6): torch.utils.benchmark's Timer compiles and runs its
# `stmt` string, which the scan never reads: the string computes in numpy and the kernel returns
# that. torch.utils is not among the torch modules a kernel may use.
import numpy as np
from torch.utils.benchmark import Timer
import torch
import triton
import triton.language as tl


@triton.jit
def relu2_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * 2.0 + y, mask=mask)


def launch(x, y, out):
    n = out.numel()
    relu2_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


def kf_forward(x, y):
    scope = {"np": np, "torch": torch, "x": x, "y": y, "box": []}
    Timer(stmt="box.append(torch.from_numpy(np.maximum(np.asarray(x), 0) * 2 + np.asarray(y)))",
          globals=scope).timeit(1)
    return scope["box"][0].to(x.device)
