# kforge gold-equivalent Triton candidate for TritonBench-T relu
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0).to(x.dtype), mask=mask)


def relu(input: torch.Tensor, inplace: bool=False) -> torch.Tensor:
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    if n > 0:
        BLOCK = 1024
        relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    if inplace and y is not input:
        input.copy_(y)
        return input
    return y
