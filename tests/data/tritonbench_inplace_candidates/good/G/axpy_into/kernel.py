# kforge's Triton candidate for the fixture task G/axpy_into (tests/data/tritonbench_inplace):
# writes y in place and returns it, as the gold does, with a block of its own.
import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + alpha * tl.load(x_ptr + offs, mask=m), mask=m)


def axpy_into(x, y, alpha):
    n = y.numel()
    axpy_kernel[(triton.cdiv(n, 256),)](x, y, n, alpha, BLOCK=256)
    return y
