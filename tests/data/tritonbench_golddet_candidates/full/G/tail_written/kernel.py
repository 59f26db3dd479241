import torch
import triton
import triton.language as tl


@triton.jit
def _whole_kernel(x_ptr, o_ptr, n, start, total, BLOCK: tl.constexpr):
    # Writes every element: 2 x + 1 from `start` on, zeros before it (where the gold writes nothing).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = offs - start
    x = tl.load(x_ptr + src, mask=(src >= 0) & (offs < total), other=0.0)
    tl.store(o_ptr + offs, tl.where(src >= 0, x * 2.0 + 1.0, 0.0), mask=offs < total)


def tail_double(x):
    n = x.numel()
    total = n + n // 2
    out = torch.empty(total, device=x.device, dtype=x.dtype)
    _whole_kernel[(triton.cdiv(total, 128),)](x, out, n, n // 2, total, BLOCK=128)
    return out
