# A Triton kernel for aten.mean.dim (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _rows(x_ptr, out_ptr, N, MODE: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row of a (M, N) matrix: MODE 0 sum, 1 mean, 2 max."""
    row = tl.program_id(0).to(tl.int64)
    if MODE == 2:
        acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    else:
        acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < N
        if MODE == 2:
            x = tl.load(x_ptr + row * N + cols, mask=m, other=float("-inf")).to(tl.float32)
            acc = tl.where((x > acc) | (x != x), x, acc)
        else:
            acc += tl.load(x_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32)
    if MODE == 2:
        r = tl.max(acc, axis=0)
    else:
        r = tl.sum(acc, axis=0)
        if MODE == 1:
            r = r / N
    tl.store(out_ptr + row, r.to(out_ptr.dtype.element_ty))


def _reduce(x, dim, keepdim, mode, dtype=None):
    nd = x.dim()
    dims = sorted({d % nd for d in dim}) if (dim is not None and len(dim) and nd) else list(range(nd))
    keep = [d for d in range(nd) if d not in dims]
    xp = x.permute(*keep, *dims).contiguous() if nd else x.contiguous()
    M = 1
    for d in keep:
        M *= x.shape[d]
    N = 1
    for d in dims:
        N *= x.shape[d]
    out = torch.empty((M,), dtype=dtype or x.dtype, device=x.device)
    if M and N:
        _rows[(M,)](xp, out, N, MODE=mode, BLOCK=min(triton.next_power_of_2(N), 1024))
    shape = [1 if d in dims else x.shape[d] for d in range(nd)] if keepdim else [x.shape[d] for d in keep]
    return out.view(shape)


def mean_kernel_impl(self, dim, keepdim=False, *, dtype=None):
    return _reduce(self, dim, keepdim, 1, dtype)
