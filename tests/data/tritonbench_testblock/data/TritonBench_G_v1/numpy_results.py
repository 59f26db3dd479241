import torch
import triton
import triton.language as tl


@triton.jit
def _double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def double_it(x):
    out = torch.empty_like(x)
    n = x.numel()
    _double_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


##################################################################################################################################################

import numpy as np
import torch


def test_double_it():
    # As TritonBench-G's bmm_optimized, log_softmax and lightning_attention: the block turns its
    # results into numpy arrays itself.
    results = {}
    results["test_case_1"] = double_it(torch.randn(100, device='cuda')).cpu().numpy()
    results["test_case_2"] = np.asarray(double_it(torch.randn(1500, device='cuda')).cpu())
    return results


result_gold = test_double_it()
