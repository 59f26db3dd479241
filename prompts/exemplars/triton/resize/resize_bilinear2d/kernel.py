# kforge Triton exemplar (resize): bilinear resize with align_corners=False (PyTorch's source-index
# rule: src = (dst + 0.5) * in / out - 0.5, clamped at 0).
# The output size comes from the model's constructor, not from an input: kf_forward takes it from
# `out` when the host passes preallocated outputs, else from the task's default constants.
import torch
import triton
import triton.language as tl

OUT_HEIGHT, OUT_WIDTH = 288, 352


@triton.jit
def bilinear_kernel(x_ptr, out_ptr, H, W, OH, OW, scale_h, scale_w, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < OH * OW
    oy = offs // OW
    ox = offs % OW
    sy = tl.maximum((oy.to(tl.float32) + 0.5) * scale_h - 0.5, 0.0)
    sx = tl.maximum((ox.to(tl.float32) + 0.5) * scale_w - 0.5, 0.0)
    y0 = sy.to(tl.int32)
    x0 = sx.to(tl.int32)
    ly = sy - y0.to(tl.float32)
    lx = sx - x0.to(tl.float32)
    y1 = tl.minimum(y0 + 1, H - 1)
    x1 = tl.minimum(x0 + 1, W - 1)
    base = x_ptr + plane * H * W
    v00 = tl.load(base + y0 * W + x0, mask=mask, other=0.0)
    v01 = tl.load(base + y0 * W + x1, mask=mask, other=0.0)
    v10 = tl.load(base + y1 * W + x0, mask=mask, other=0.0)
    v11 = tl.load(base + y1 * W + x1, mask=mask, other=0.0)
    top = v00 * (1.0 - lx) + v01 * lx
    bottom = v10 * (1.0 - lx) + v11 * lx
    tl.store(out_ptr + plane * OH * OW + offs, top * (1.0 - ly) + bottom * ly, mask=mask)


def kf_forward(x, out=None):
    x = x.contiguous()
    n, c, h, w = x.shape
    if out is None:
        out = torch.empty((n, c, OUT_HEIGHT, OUT_WIDTH), dtype=x.dtype, device=x.device)
    oh, ow = out.shape[-2], out.shape[-1]
    BLOCK = 256
    bilinear_kernel[(n * c, triton.cdiv(oh * ow, BLOCK))](x, out, h, w, oh, ow, h / oh, w / ow, BLOCK=BLOCK)
    return out
