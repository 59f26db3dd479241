# kforge gold-equivalent Triton candidate for TritonBench-T abs
import torch
import triton
import triton.language as tl


@triton.jit
def abs_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.abs(x), mask=mask)


def abs(input_tensor, out=None):
    x = input_tensor.contiguous()
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    if n > 0:
        BLOCK = 1024
        abs_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    return y
