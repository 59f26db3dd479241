# A Triton kernel for aten.gelu.default (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    if TANH:
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        e = tl.exp(-2.0 * tl.abs(u))
        t = (1.0 - e) / (1.0 + e)
        y = 0.5 * x * (1.0 + tl.where(u < 0, -t, t))
    else:
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def gelu_kernel_impl(self, approximate='none'):
    x = self.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, 1024),)](x, out, n, TANH=approximate == 'tanh', BLOCK=1024)
    return out
