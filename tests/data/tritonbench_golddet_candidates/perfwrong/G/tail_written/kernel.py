import torch
import triton
import triton.language as tl


@triton.jit
def _tail_kernel(x_ptr, o_ptr, n, start, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + start + offs, tl.load(x_ptr + offs, mask=m) * scale + 1.0, mask=m)


def tail_double(x):
    # Right where the gold writes on the test block's sizes (256, 300) and on the smallest
    # performance input (256), wrong there on the larger ones: the performance bench, which
    # verifies only the elements the gold determines, must still catch it (not timed).
    n = x.numel()
    out = torch.empty(n + n // 2, device=x.device, dtype=x.dtype)
    _tail_kernel[(triton.cdiv(n, 128),)](x, out, n, n // 2, 2.0 if n <= 300 else 3.0, BLOCK=128)
    return out
