# kforge Triton exemplar (math): y = sum_k coeffs[k] * x^k by Horner's rule, elementwise.
import torch
import triton
import triton.language as tl


@triton.jit
def horner_kernel(x_ptr, c_ptr, out_ptr, n, n_coeffs, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.zeros((BLOCK,), dtype=tl.float32) + tl.load(c_ptr + n_coeffs - 1)
    for j in range(1, n_coeffs):
        y = y * x + tl.load(c_ptr + n_coeffs - 1 - j)
    tl.store(out_ptr + offs, y, mask=mask)


def kf_forward(x, coeffs):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    horner_kernel[(triton.cdiv(n, BLOCK),)](x, coeffs.contiguous(), out, n, coeffs.shape[0], BLOCK=BLOCK)
    return out
