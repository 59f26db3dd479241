# An elementwise Triton kernel for aten.abs.default (kforge's operator-suite test; written for kforge).
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.abs(x)
    tl.store(out_ptr + offs, y, mask=m)


def abs_kernel_impl(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    _kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
