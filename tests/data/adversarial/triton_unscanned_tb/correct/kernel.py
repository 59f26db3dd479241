# The fixture's right answer in Triton: relu(input) * scale. It must pass under the recorder
# that counts every op of the test block by line (no false torch_fallback for the block's own
# torch.tensor calls).
import torch
import triton
import triton.language as tl


@triton.jit
def _relu_scale(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    tl.store(y_ptr + o, tl.where(x > 0, x, 0.0) * s, mask=m)


def relu_scale(input, scale=2.0, out=None):
    y = torch.empty_like(input)
    _relu_scale[(triton.cdiv(input.numel(), 128),)](input, y, input.numel(), scale, BLOCK=128)
    return y
