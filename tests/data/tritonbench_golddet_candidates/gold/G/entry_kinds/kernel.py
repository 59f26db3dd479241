import torch
import triton
import triton.language as tl


@triton.jit
def neg(v):
    return -v


@triton.jit
def scale_kernel(x_ptr, o_ptr, n, s, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, ACT(tl.load(x_ptr + offs, mask=m) * s), mask=m)


class Scale(torch.autograd.Function):
    # As TritonBench-G's attention_fwd_triton1: the test block calls Scale.apply.
    @staticmethod
    def forward(ctx, x, s):
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 128),)](x, out, n, s, ACT=neg, BLOCK=128)
        return out


class ScaleModule(torch.nn.Module):
    # As G/fast_rms_layernorm: a class that names itself in super().
    def __init__(self, s):
        super(ScaleModule, self).__init__()
        self.s = s

    def forward(self, x):
        return Scale.apply(x, self.s)
