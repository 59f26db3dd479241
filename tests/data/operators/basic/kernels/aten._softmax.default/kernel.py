# A Triton kernel for aten._softmax.default (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, out_ptr, N, LOG: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: an online max and sum of exponentials, then the normalised row."""
    row = tl.program_id(0).to(tl.int64)
    mx = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        new = tl.maximum(mx, x)
        s = tl.where(new == float("-inf"), 0.0, s * tl.exp(mx - new) + tl.exp(x - new))
        mx = new
    big = tl.max(mx, axis=0)
    total = tl.sum(tl.where(mx == float("-inf"), 0.0, s * tl.exp(mx - big)), axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32)
        if LOG:
            y = x - big - tl.log(total)
        else:
            y = tl.exp(x - big) / total
        tl.store(out_ptr + row * N + cols, y.to(out_ptr.dtype.element_ty), mask=m)


def _softmax(x, dim, half_to_float, log):
    nd = max(x.dim(), 1)
    dim = dim % nd
    xm = x.reshape(x.shape if x.dim() else (1,)).movedim(dim, -1).contiguous()
    N = xm.shape[-1]
    out_dtype = torch.float32 if half_to_float else x.dtype
    out = torch.empty(xm.shape, dtype=out_dtype, device=x.device)
    if out.numel():
        _softmax_rows[(out.numel() // N,)](xm, out, N, LOG=log, BLOCK=min(triton.next_power_of_2(N), 1024))
    return out.movedim(-1, dim).reshape(x.shape).contiguous()


def _softmax_kernel_impl(self, dim, half_to_float):
    return _softmax(self, dim, half_to_float, False)
