# An elementwise Triton kernel for aten.relu.default (kforge's operator-suite test; written for kforge).
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.where(x > 0, x, 0.0)
    tl.store(out_ptr + offs, y, mask=m)


def relu_kernel_impl(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    _kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out
