import torch
import triton
import triton.language as tl


@triton.jit
def _tail_kernel(x_ptr, o_ptr, n, start, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + start + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


def tail_double(x):
    # As TritonBench-G's attn_fwd_causal: the result is allocated larger than the kernel writes,
    # and the rest (here its first third) is left as torch.empty gave it.
    n = x.numel()
    out = torch.empty(n + n // 2, device=x.device, dtype=x.dtype)
    _tail_kernel[(triton.cdiv(n, 128),)](x, out, n, n // 2, BLOCK=128)
    return out
