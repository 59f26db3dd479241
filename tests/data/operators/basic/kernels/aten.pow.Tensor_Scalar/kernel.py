# A Triton kernel for aten.pow.Tensor_Scalar (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, e, INT_EXP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    if INT_EXP >= 0:
        y = tl.full(x.shape, 1.0, tl.float32)
        for _ in tl.static_range(INT_EXP):
            y = y * x
    else:
        y = tl.where(x == 0.0, 0.0, tl.exp(e * tl.log(x)))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=m)


def pow_kernel_impl(self, exponent):
    integral = float(exponent) == int(exponent) and 0 <= int(exponent) <= 16
    x = self.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = x.numel()
    if n:
        _kernel[(triton.cdiv(n, 1024),)](x, out, n, float(exponent), INT_EXP=int(exponent) if integral else -1, BLOCK=1024)
    return out
