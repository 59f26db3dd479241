# kforge's Triton candidate for the fixture task T/relu_scale (tests/data/tritonbench), timed on its
# performance script's inputs (issue 22 section 4)
import torch
import triton
import triton.language as tl


@triton.jit
def relu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0) * scale, mask=mask)


def relu_scale(input, scale=2.0, out=None):
    y = torch.empty_like(input) if out is None else out
    n = input.numel()
    relu_scale_kernel[(triton.cdiv(n, 128),)](input, y, n, scale, BLOCK=128)
    return y
