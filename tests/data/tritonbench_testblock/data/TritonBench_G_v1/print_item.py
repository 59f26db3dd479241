import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _copy_kernel(in_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=m), mask=m)


def wrapper_copy(n_rows, n_cols):
    # As TritonBench-G's nested_loops_processing: an int32 result printed (each element read to
    # the host with .item()), and here returned too.
    x = torch.arange(0, n_rows * n_cols, device=DEVICE, dtype=torch.int32).reshape([n_rows, n_cols])
    output = torch.zeros([n_rows, n_cols], device=x.device, dtype=x.dtype)
    _copy_kernel[(1,)](x, output, n_rows * n_cols, BLOCK=256)
    print(output)
    return output


##################################################################################################################################################

import torch


def test_wrapper_copy():
    results = {}
    results["test_case_1"] = wrapper_copy(4, 4)
    results["test_case_2"] = wrapper_copy(2, 8)
    return results


result_gold = test_wrapper_copy()
