# kforge gold-equivalent Triton candidate for TritonBench-T leaky_relu
import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, negative_slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(x > 0, x, x * negative_slope)
    tl.store(y_ptr + offs, y.to(x.dtype), mask=mask)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    x = input.contiguous()
    y = x if inplace else torch.empty_like(x)
    n = x.numel()
    if n > 0:
        BLOCK = 1024
        leaky_relu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, float(negative_slope), BLOCK=BLOCK)
    if inplace and y is not input:
        input.copy_(y)
        return input
    return y
