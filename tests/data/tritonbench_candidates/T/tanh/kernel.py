# kforge gold-equivalent Triton candidate for TritonBench-T tanh
import torch
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    # tanh(|x|) = (1 - e^{-2|x|}) / (1 + e^{-2|x|}): no overflow for large |x|
    t = tl.exp(-2.0 * tl.abs(x))
    y = (1.0 - t) / (1.0 + t)
    y = tl.where(x < 0, -y, y)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def tanh(input_tensor, out_tensor=None):
    x = input_tensor.contiguous()
    y = torch.empty_like(x) if out_tensor is None else out_tensor
    n = x.numel()
    if n > 0:  # the test passes an empty tensor
        BLOCK = 1024
        tanh_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)
    return y
