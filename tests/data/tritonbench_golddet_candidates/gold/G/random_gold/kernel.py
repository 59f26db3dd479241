import time

import torch
import triton
import triton.language as tl


@triton.jit
def _noise_kernel(x_ptr, o_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.rand(seed, offs), mask=m)


def add_noise(x):
    # The seed comes from the clock, which torch.manual_seed does not govern: every call draws
    # other noise (as a dropout-style kernel whose seed is not torch's).
    out = torch.empty_like(x)
    seed = time.perf_counter_ns() % (1 << 30)
    _noise_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), seed, BLOCK=128)
    return out
