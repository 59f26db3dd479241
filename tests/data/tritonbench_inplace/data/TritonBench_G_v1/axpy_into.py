import torch
import triton
import triton.language as tl


@triton.jit
def _axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + alpha * tl.load(x_ptr + offs, mask=m), mask=m)


def axpy_into(x, y, alpha):
    # Writes its input y and returns it, as TritonBench-G's bgmv_shrink_kernel's call_op does.
    n = y.numel()
    _axpy_kernel[(triton.cdiv(n, 128),)](x, y, n, alpha, BLOCK=128)
    return y

##################################################################################################################################################

import torch

def test_axpy_into():
    results = {}
    for k, size in enumerate([64, 300]):
        x = torch.rand(size, device='cuda')
        y = torch.rand(size, device='cuda')
        results[f"test_case_{k + 1}"] = axpy_into(x, y, 0.5).clone()
    return results

result_gold = test_axpy_into()
