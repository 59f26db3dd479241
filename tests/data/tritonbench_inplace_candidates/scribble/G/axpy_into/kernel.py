# kforge's fixture: a candidate for G/axpy_into that does the work (y += alpha x, y returned) and
# also writes x, which the reference never writes: x is not cloned for it, so the judge's
# bit-for-bit check of its inputs catches the write (tritonbench_perf.hpp, "in place").
import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + alpha * x, mask=m)
    tl.store(x_ptr + offs, x + 1.0, mask=m)


def axpy_into(x, y, alpha):
    n = y.numel()
    axpy_kernel[(triton.cdiv(n, 256),)](x, y, n, alpha, BLOCK=256)
    return y
