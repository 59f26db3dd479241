import torch
import triton
import triton.language as tl

###########################################################################################################
# A long comment rule, not the separator.

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def add_wrapper(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out

##################################################################################################################################################

import torch

def test_add():
    results = {}
    for k, size in enumerate([16, 8, 32, 0]):
        x = torch.rand(size, device='cuda')
        y = torch.rand(size, device='cuda')
        results[f"test_case_{k + 1}"] = add_wrapper(x, y)
    return results

result_gold = test_add()
