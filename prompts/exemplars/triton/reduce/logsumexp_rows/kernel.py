# kforge Triton exemplar (reduce): logsumexp over each row, one program per row, with an online
# maximum so rows offset by +-100s neither overflow nor underflow.
import torch
import triton
import triton.language as tl


@triton.jit
def logsumexp_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, x)
        s = s * tl.exp(tl.where(new_m == float("-inf"), 0.0, m - new_m)) + tl.where(x == float("-inf"), 0.0,
                                                                                   tl.exp(x - new_m))
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.exp(tl.where(m == float("-inf"), float("-inf"), m - row_max)), axis=0)
    tl.store(out_ptr + row, row_max + tl.log(total))


def kf_forward(x):
    x = x.contiguous()
    cols = x.shape[-1]
    out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
    logsumexp_kernel[(x.numel() // cols,)](x, out, cols, BLOCK=1024)
    return out
