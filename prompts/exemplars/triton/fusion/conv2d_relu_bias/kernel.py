# kforge Triton exemplar (fusion, a convolution with an epilogue): y = ReLU(conv3x3(x) + conv.bias)
# + bias, fp32, stride 1, padding 1. Inputs: x [N, C, H, W], then the parameters in
# named_parameters() order, the module's own before its submodules': bias [O, 1, 1],
# conv.weight [O, C, KH, KW], conv.bias [O].
# Implicit GEMM: rows are output pixels (n, oh, ow), columns output channels, the reduction runs
# over (c, kh, kw); each [BM, BK] tile of the input is gathered with the padding as a mask (never
# materialised), multiplied with a [BK, BN] tile of the weight by tl.dot (IEEE fp32 products),
# and the epilogue (conv bias, ReLU, bias) is applied to the accumulator before its one store.
import torch
import triton
import triton.language as tl


@triton.jit
def conv_relu_bias_kernel(x_ptr, w_ptr, cb_ptr, b_ptr, y_ptr, NPIX, C, H, W, O,
                          KH: tl.constexpr, KW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)  # output pixel: n * H * W + oh * W + ow
    rn = tl.program_id(1) * BN + tl.arange(0, BN)  # output channel
    n = rm // (H * W)
    oh = (rm % (H * W)) // W
    ow = rm % W
    KTOT = C * KH * KW
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, KTOT, BK):
        rk = k0 + tl.arange(0, BK)  # (c, kh, kw) flattened, as in the weight's layout
        c = rk // (KH * KW)
        kh = (rk % (KH * KW)) // KW
        kw = rk % KW
        ih = oh[:, None] + kh[None, :] - KH // 2
        iw = ow[:, None] + kw[None, :] - KW // 2
        m = (rm[:, None] < NPIX) & (rk[None, :] < KTOT) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a = tl.load(x_ptr + ((n[:, None] * C + c[None, :]) * H + ih) * W + iw, mask=m, other=0.0)
        wt = tl.load(w_ptr + rn[None, :] * KTOT + rk[:, None], mask=(rk[:, None] < KTOT) & (rn[None, :] < O),
                     other=0.0)
        acc += tl.dot(a, wt, input_precision="ieee")
    cmask = rn < O
    acc += tl.load(cb_ptr + rn, mask=cmask, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0) + tl.load(b_ptr + rn, mask=cmask, other=0.0)[None, :]
    out = y_ptr + ((n[:, None] * O + rn[None, :]) * H + oh[:, None]) * W + ow[:, None]
    tl.store(out, acc, mask=(rm[:, None] < NPIX) & cmask[None, :])


def kf_forward(x, bias, weight, conv_bias):
    x = x.contiguous()
    weight = weight.contiguous()
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    y = torch.empty((n, o, h, w), dtype=x.dtype, device=x.device)
    BM, BN, BK = 64, 32, 32
    grid = (triton.cdiv(n * h * w, BM), triton.cdiv(o, BN))
    conv_relu_bias_kernel[grid](x, weight, conv_bias, bias, y, n * h * w, c, h, w, o, KH=kh, KW=kw, BM=BM, BN=BN,
                                BK=BK)
    return y
