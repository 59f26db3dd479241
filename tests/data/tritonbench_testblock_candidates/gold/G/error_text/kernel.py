import torch
import triton
import triton.language as tl


@triton.jit
def _double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def safe_double(x):
    if x.dim() != 1:
        raise ValueError("safe_double takes a 1-D tensor")
    out = torch.empty_like(x)
    _double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out
