# Adversarial Triton candidate: hides torch behind a subscript, then reaches torch.sys from the element (attributes after a subscript are checked; a module is never a value).
import torch
import triton
import triton.language as tl


@triton.jit
def relu2_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * 2.0 + y, mask=mask)


def launch(x, y, out):
    n = out.numel()
    relu2_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


_mods = [torch]


def kf_forward(x, y):
    _mods[0].sys.modules.clear()
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
