import torch
import triton
import triton.language as tl


@triton.jit
def _tail_kernel(x_ptr, o_ptr, n, start, BLOCK: tl.constexpr):
    # The gold's values, but the 8th written element is off by 0.5.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0
    tl.store(o_ptr + start + offs, tl.where(offs == 7, y + 0.5, y), mask=m)


def tail_double(x):
    n = x.numel()
    out = torch.empty(n + n // 2, device=x.device, dtype=x.dtype)
    _tail_kernel[(triton.cdiv(n, 128),)](x, out, n, n // 2, BLOCK=128)
    return out
