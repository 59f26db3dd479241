# kforge Triton exemplar (convolution): depthwise 5x5 convolution, padding 2, with bias.
# Inputs: x, then the parameters in named_parameters() order: conv.weight [C, 1, 5, 5], conv.bias [C].
import torch
import triton
import triton.language as tl


@triton.jit
def dwconv_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C, H, W, K: tl.constexpr, BLOCK_H: tl.constexpr,
                  BLOCK_W: tl.constexpr):
    plane = tl.program_id(0)  # n * C + c
    c = plane % C
    rows = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    cols = tl.program_id(2) * BLOCK_W + tl.arange(0, BLOCK_W)
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    base = x_ptr + plane * H * W
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            r = rows[:, None] + (kh - K // 2)
            q = cols[None, :] + (kw - K // 2)
            m = (r >= 0) & (r < H) & (q >= 0) & (q < W)
            v = tl.load(base + r * W + q, mask=m, other=0.0)
            acc += v * tl.load(w_ptr + c * K * K + kh * K + kw)
    acc += tl.load(b_ptr + c)
    out_mask = (rows[:, None] < H) & (cols[None, :] < W)
    tl.store(out_ptr + plane * H * W + rows[:, None] * W + cols[None, :], acc, mask=out_mask)


def kf_forward(x, weight, bias):
    x = x.contiguous()
    n, c, h, w = x.shape
    out = torch.empty_like(x)
    grid = (n * c, triton.cdiv(h, 16), triton.cdiv(w, 32))
    dwconv_kernel[grid](x, weight.contiguous(), bias, out, c, h, w, K=weight.shape[-1], BLOCK_H=16, BLOCK_W=32)
    return out
