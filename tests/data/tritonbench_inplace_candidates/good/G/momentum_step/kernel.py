# kforge's Triton candidate for the fixture task G/momentum_step (tests/data/tritonbench_inplace):
# updates p and buf in place, as the gold does, with a block of its own.
import torch
import triton
import triton.language as tl


@triton.jit
def momentum_kernel(p_ptr, g_ptr, b_ptr, n, lr, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = beta * tl.load(b_ptr + offs, mask=m) + tl.load(g_ptr + offs, mask=m)
    tl.store(b_ptr + offs, b, mask=m)
    tl.store(p_ptr + offs, tl.load(p_ptr + offs, mask=m) - lr * b, mask=m)


def update_fn(p, grad, buf, lr, beta):
    n = p.numel()
    momentum_kernel[(triton.cdiv(n, 256),)](p, grad, buf, n, lr, beta, BLOCK=256)
