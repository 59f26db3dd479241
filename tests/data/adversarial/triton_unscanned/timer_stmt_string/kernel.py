# Unscanned Triton candidate (issue 38 §2.6): torch.utils.benchmark's Timer compiles its `stmt`
# string (timeit does). The kernel itself computes honestly with Triton; only the Timer call
# tells whether source text can still be compiled in the host once the candidate exists.
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
    Timer(stmt="pass").timeit(1)
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
