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


##################################################################################################################################################

import torch


def test_entry_kinds():
    # Entry points of every kind (issue 22 §2): an autograd.Function's apply, a module built with
    # super(), a Triton kernel launched with its grid and a Triton function passed to it (as
    # G/fused_activation and G/matmul_leakyrelu), and results that are not finite numbers.
    x = torch.randn(300, device='cuda')
    out = torch.empty_like(x)
    scale_kernel[(3,)](x, out, 300, 0.5, ACT=neg, BLOCK=128)
    return {"apply": Scale.apply(x, 2.0), "module": ScaleModule(3.0)(x), "launch": out,
            "nan": float("nan"), "inf": float("-inf")}


result_gold = test_entry_kinds()
