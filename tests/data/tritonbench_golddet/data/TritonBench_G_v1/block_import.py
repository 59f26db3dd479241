import triton
import triton.language as tl


@triton.jit
def _double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def doubled(x):
    # As TritonBench-G's block_sparse_attn: `torch` is imported by the test block only, which
    # TritonBench runs in the same file.
    out = torch.empty_like(x)
    _double_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
    return out


##################################################################################################################################################

import torch


def test_doubled():
    return {"test_case_1": doubled(torch.randn(300, device='cuda'))}


result_gold = test_doubled()
