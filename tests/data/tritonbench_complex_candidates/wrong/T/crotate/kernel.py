# kforge's Triton candidate for the complex fixture task T/crotate (issue 21 section 5): wrong on purpose
# (it rotates the other way).
import torch
import triton
import triton.language as tl


@triton.jit
def crotate_kernel(x_ptr, angle_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    xr = tl.load(x_ptr + 2 * offs, mask=mask)
    xi = tl.load(x_ptr + 2 * offs + 1, mask=mask)
    t = tl.load(angle_ptr + offs, mask=mask)
    c = tl.cos(t)
    s = -tl.sin(t)
    tl.store(out_ptr + 2 * offs, xr * c - xi * s, mask=mask)
    tl.store(out_ptr + 2 * offs + 1, xr * s + xi * c, mask=mask)


def crotate(input, angle):
    x = input.contiguous()
    a = angle.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n > 0:
        BLOCK = 256
        crotate_kernel[(triton.cdiv(n, BLOCK),)](torch.view_as_real(x), a, torch.view_as_real(out), n,
                                                 BLOCK=BLOCK)
    return out
