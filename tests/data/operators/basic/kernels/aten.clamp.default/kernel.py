# A Triton kernel for aten.clamp.default (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, lo, hi, HAS_MIN: tl.constexpr, HAS_MAX: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    y = x
    if HAS_MIN:
        y = tl.where(y < lo, lo, y)
    if HAS_MAX:
        y = tl.where(y > hi, hi, y)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def clamp_kernel_impl(self, min=None, max=None):
    x = self.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, 1024),)](x, out, n, 0.0 if min is None else float(min), 0.0 if max is None else float(max), HAS_MIN=min is not None, HAS_MAX=max is not None, BLOCK=1024)
    return out
