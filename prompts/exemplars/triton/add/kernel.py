# kforge Triton exemplar: elementwise a + b. kf_forward gets the inputs in get_inputs() order
# and returns the output; torch only allocates, the @triton.jit kernel computes.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def kf_forward(a, b):
    a = a.contiguous()
    b = b.contiguous()
    out = torch.empty_like(a)
    n = out.numel()
    BLOCK = 1024
    add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)
    return out
