# kforge Triton exemplar (pooling): 2-D max pooling, kernel 3, stride 2, padding 1 (the task's constants).
import torch
import triton
import triton.language as tl

KERNEL, STRIDE, PADDING = 3, 2, 1


@triton.jit
def max_pool_kernel(x_ptr, out_ptr, H, W, OH, OW, K: tl.constexpr, S: tl.constexpr, P: tl.constexpr,
                    BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            h = oh * S - P + kh
            w = ow * S - P + kw
            m = mask & (h >= 0) & (h < H) & (w >= 0) & (w < W)
            v = tl.load(x_ptr + plane * H * W + h * W + w, mask=m, other=float("-inf"))
            best = tl.maximum(best, v)
    tl.store(out_ptr + plane * OH * OW + offs, best, mask=mask)


def kf_forward(x):
    x = x.contiguous()
    n, c, h, w = x.shape
    oh = (h + 2 * PADDING - KERNEL) // STRIDE + 1
    ow = (w + 2 * PADDING - KERNEL) // STRIDE + 1
    out = torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device)
    BLOCK = 256
    max_pool_kernel[(n * c, triton.cdiv(oh * ow, BLOCK))](x, out, h, w, oh, ow, K=KERNEL, S=STRIDE, P=PADDING,
                                                          BLOCK=BLOCK)
    return out
