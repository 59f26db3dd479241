import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def relu_copy(x):
    # As many TritonBench-G golds, PyTorch and Triton mixed: the relu is PyTorch's (an op a
    # candidate may then run too), the copy into the result a Triton kernel.
    y = torch.relu(x)
    out = torch.empty_like(y)
    n = y.numel()
    _copy_kernel[(triton.cdiv(n, 64),)](y, out, n, BLOCK=64)
    return out
