import torch
import triton
import triton.language as tl

BLOCK_DEFAULT = 256

@triton.jit
def _swiglu_fwd_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a * tl.sigmoid(a) * b, mask=mask)

def swiglu_forward(a, b):
    c = torch.empty_like(a)
    n = c.numel()
    _swiglu_fwd_kernel[(triton.cdiv(n, BLOCK_DEFAULT),)](a, b, c, n, BLOCK=BLOCK_DEFAULT)
    return c

def swiglu_backward(a, b, dc):
    raise NotImplementedError

##################################################################################################################################################

import torch

def test_swiglu():
    a = torch.randn(64, device='cuda')
    b = torch.randn(64, device='cuda')
    c = swiglu_forward(a, b)
    return {"test_case_1": c, "has_backward": callable(swiglu_backward)}

if __name__ == "__main__":
    result_gold = test_swiglu()
