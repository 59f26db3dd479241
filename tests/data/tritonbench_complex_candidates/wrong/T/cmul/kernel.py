# kforge's Triton candidate for the complex fixture task T/cmul (issue 21 section 5): wrong on purpose
# (the imaginary part subtracts where it should add).
import torch
import triton
import triton.language as tl


@triton.jit
def cmul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # The complex tensors as interleaved (real, imaginary) pairs of their component dtype.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ar = tl.load(a_ptr + 2 * offs, mask=mask)
    ai = tl.load(a_ptr + 2 * offs + 1, mask=mask)
    br = tl.load(b_ptr + 2 * offs, mask=mask)
    bi = tl.load(b_ptr + 2 * offs + 1, mask=mask)
    tl.store(out_ptr + 2 * offs, ar * br - ai * bi, mask=mask)
    tl.store(out_ptr + 2 * offs + 1, ar * bi - ai * br, mask=mask)


def cmul(input, other):
    a = input.contiguous()
    b = other.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    n = out.numel()
    if n > 0:
        BLOCK = 256
        cmul_kernel[(triton.cdiv(n, BLOCK),)](torch.view_as_real(a), torch.view_as_real(b),
                                              torch.view_as_real(out), n, BLOCK=BLOCK)
    return out
