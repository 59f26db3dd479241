# An elementwise Triton kernel for aten.mul.Tensor (kforge's operator-suite test; written for kforge).
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, o_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(x_ptr + offs, mask=m) * tl.load(o_ptr + offs, mask=m)
    tl.store(out_ptr + offs, y, mask=m)


def mul_kernel_impl(x, other):
    x = x.contiguous()
    other = other.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    _kernel[(triton.cdiv(n, 256),)](x, other, out, n, BLOCK=256)
    return out
