# A Triton kernel for aten.rsqrt.default (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    y = 1.0 / tl.sqrt(x)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def rsqrt_kernel_impl(self):
    x = self.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out
