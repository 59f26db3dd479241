# kforge's Triton candidate for the fixture task T/literal_relu (issue 38): a relu kernel
import torch
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, tl.where(x > 0, x, 0.0), mask=m)


def literal_relu(input):
    x = input.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
