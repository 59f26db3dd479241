# kforge gold-equivalent Triton candidate for TritonBench-T gelu
import torch
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, APPROX_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if APPROX_TANH:
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), tanh(u) = 2 sigmoid(2u) - 1
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = x / (1.0 + tl.exp(-2.0 * u))
    else:
        y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def gelu(input: torch.Tensor, approximate: str='none') -> torch.Tensor:
    if approximate not in ('none', 'tanh'):
        raise ValueError("approximate argument must be either none or tanh.")
    x = input.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n > 0:
        BLOCK = 1024
        gelu_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, APPROX_TANH=(approximate == 'tanh'), BLOCK=BLOCK)
    return y
