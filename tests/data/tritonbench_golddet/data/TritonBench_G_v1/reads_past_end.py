import torch
import triton
import triton.language as tl


@triton.jit
def _shift_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    # As TritonBench-G's decay_cumsum: the load runs past the end of x, without a mask.
    tl.store(o_ptr + offs, tl.load(x_ptr + offs + 4) * 2.0, mask=m)


def shifted_double(x):
    # 2 x[i + 4]: the last four elements are made of whatever lies past x.
    out = torch.empty_like(x)
    _shift_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
    return out


##################################################################################################################################################

import torch


def test_shifted_double():
    results = {}
    for k, n in enumerate([256, 300]):
        x = torch.randn(n, device='cuda')
        results[f"test_case_{k + 1}"] = shifted_double(x)
    return results


result_gold = test_shifted_double()
