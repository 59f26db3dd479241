import time

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def add_noise(x):
    # torch.rand on a generator seeded from the clock, which torch.manual_seed does not govern:
    # every call draws other noise (as a dropout-style gold whose seed is not torch's).
    gen = torch.Generator(device=x.device).manual_seed(time.perf_counter_ns())
    noise = torch.rand(x.shape, generator=gen, device=x.device)
    out = torch.empty_like(x)
    _add_kernel[(triton.cdiv(x.numel(), 128),)](x, noise, out, x.numel(), BLOCK=128)
    return out
