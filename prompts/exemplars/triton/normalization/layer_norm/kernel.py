# kforge Triton exemplar (normalization): layer norm over the last dimension, one program per row.
# Inputs: x, then weight, bias. eps = 1e-5 (the task's EPS).
import torch
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x = tl.load(x_ptr + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / dim
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / dim
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * dim + cols, d * tl.rsqrt(var + eps) * w + b, mask=mask)


def kf_forward(x, weight, bias):
    x = x.contiguous()
    dim = x.shape[-1]
    y = torch.empty_like(x)
    layer_norm_kernel[(x.numel() // dim,)](x, weight, bias, y, dim, 1e-5, BLOCK=triton.next_power_of_2(dim))
    return y
