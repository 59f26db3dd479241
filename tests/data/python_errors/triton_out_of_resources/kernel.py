import torch
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(out_ptr + offs, tl.sum(tl.dot(x, x), axis=1))


def kf_forward(x, y):
    out = torch.empty(1024, device=x.device)
    kernel[(1,)](x, out, BLOCK=1024)
    return out
