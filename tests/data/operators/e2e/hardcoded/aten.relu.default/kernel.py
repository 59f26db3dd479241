# A Triton kernel for aten.relu.default that holds only for the shapes its prompt showed (kforge's
# generalisation test, issue 24 §3; written for kforge): the grid is hard-coded to the largest shown
# case (64 x 32 = 2048 elements, 8 blocks of 256), so every shown case passes and a larger tensor
# keeps an unwritten tail. `kforge library export --as-backend` must leave it out.
import torch
import triton
import triton.language as tl


@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.where(x > 0, x, 0.0)
    tl.store(out_ptr + offs, y, mask=m)


def relu_kernel_impl(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    _kernel[(8,)](x, out, out.numel(), BLOCK=256)  # 8 blocks: the 2048 elements of the shown case
    return out
