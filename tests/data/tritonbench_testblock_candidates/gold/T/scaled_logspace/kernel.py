# kforge's Triton candidate for the fixture task T/scaled_logspace (issue 38 section 3), as R1's
# TritonBench-T logspace: the bounds read to the host with .item(), the powers computed in
# float32 and stored as float64 (within TritonBench's printed precision, not float64's 1e-8).
import torch
import triton
import triton.language as tl


@triton.jit
def _logspace_kernel(o_ptr, start, step, log2_base, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    e = start + offs.to(tl.float32) * step
    tl.store(o_ptr + offs, tl.exp2(e * log2_base).to(tl.float64), mask=m)


def scaled_logspace(start, end, steps, base=10.0):
    import math
    lo, hi = start.item(), end.item()
    step = (hi - lo) / (steps - 1) if steps > 1 else 0.0
    out = torch.empty(steps, dtype=torch.float64, device=start.device)
    _logspace_kernel[(triton.cdiv(steps, 64),)](out, lo, step, math.log2(base), steps, BLOCK=64)
    return out
