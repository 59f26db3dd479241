# A Triton kernel for aten.native_layer_norm.default (kforge's basic operator suite: a scripted reply; written for kforge).
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _ln_rows(x_ptr, w_ptr, b_ptr, out_ptr, mean_ptr, rstd_ptr, N, eps,
             HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row: mean, biased variance (two passes), then (x - mean) * rstd * w + b."""
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        m = cols < N
        y = (tl.load(x_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32) - mean) * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=m, other=1.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * N + cols, y.to(out_ptr.dtype.element_ty), mask=m)
    tl.store(mean_ptr + row, mean.to(mean_ptr.dtype.element_ty))
    tl.store(rstd_ptr + row, rstd.to(rstd_ptr.dtype.element_ty))


def native_layer_norm_kernel_impl(input, normalized_shape, weight, bias, eps):
    axis = input.dim() - len(normalized_shape)
    N = 1
    for s in normalized_shape:
        N *= s
    x = input.contiguous()
    M = x.numel() // N if N else 0
    stat_dtype = input.dtype if input.dtype in (torch.float32, torch.float64) else torch.float32
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    stat_shape = list(input.shape[:axis]) + [1] * len(normalized_shape)
    mean = torch.empty(stat_shape, dtype=stat_dtype, device=x.device)
    rstd = torch.empty(stat_shape, dtype=stat_dtype, device=x.device)
    w = weight.contiguous() if weight is not None else x
    b = bias.contiguous() if bias is not None else x
    if M and N:
        _ln_rows[(M,)](x, w, b, out, mean, rstd, N, eps, HAS_W=weight is not None, HAS_B=bias is not None,
                       BLOCK=min(triton.next_power_of_2(N), 1024))
    return out, mean, rstd
