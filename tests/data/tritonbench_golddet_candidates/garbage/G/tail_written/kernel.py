import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, o_ptr, n, start, BLOCK: tl.constexpr):
    # The gold's values where the gold writes nothing (the first third), garbage (3 x) exactly
    # where the gold writes (the rest).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + start + offs, x * 3.0, mask=m)
    tl.store(o_ptr + offs, x * 2.0 + 1.0, mask=offs < start)


def tail_double(x):
    n = x.numel()
    out = torch.empty(n + n // 2, device=x.device, dtype=x.dtype)
    _kernel[(triton.cdiv(n, 128),)](x, out, n, n // 2, BLOCK=128)
    return out
