# kforge Triton exemplar (fusion): s = x + residual and y = layer_norm(s) in one pass over each row;
# returns (y, s). Inputs: x, residual, then weight, bias. eps = 1e-5 (the task's EPS).
import torch
import triton
import triton.language as tl


@triton.jit
def add_layernorm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, y_ptr, s_ptr, dim, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < dim
    x = tl.load(x_ptr + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + row * dim + cols, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(s_ptr + row * dim + cols, s, mask=mask)
    mean = tl.sum(s, axis=0) / dim
    d = tl.where(mask, s - mean, 0.0)
    var = tl.sum(d * d, axis=0) / dim
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * dim + cols, d * tl.rsqrt(var + eps) * w + b, mask=mask)


def kf_forward(x, residual, weight, bias):
    x = x.contiguous()
    residual = residual.contiguous()
    dim = x.shape[-1]
    rows = x.numel() // dim
    y = torch.empty_like(x)
    s = torch.empty_like(x)
    add_layernorm_kernel[(rows,)](x, residual, weight, bias, y, s, dim, 1e-5, BLOCK=triton.next_power_of_2(dim))
    return y, s
