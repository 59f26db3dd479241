# kforge gold-equivalent Triton candidate for TritonBench-T softmax
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, inner, COMPUTE_F64: tl.constexpr, BLOCK_N: tl.constexpr):
    # the input is viewed as (outer, N, inner); one program per (outer, inner) pair
    pid = tl.program_id(0)
    base = (pid // inner) * N * inner + pid % inner
    k = tl.arange(0, BLOCK_N)
    mask = k < N
    x = tl.load(x_ptr + base + k * inner, mask=mask, other=-float("inf"))
    x = x.to(tl.float64) if COMPUTE_F64 else x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + base + k * inner, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(input: torch.Tensor, dim: int, dtype: torch.dtype=None) -> torch.Tensor:
    x = input.contiguous()
    out = torch.empty(x.shape, dtype=dtype or x.dtype, device=x.device)
    if x.dim() == 0:
        x, dim = x.reshape(1), 0
    dim = dim % x.dim()
    N = x.shape[dim]
    inner = 1
    for s in x.shape[dim + 1:]:
        inner *= s
    rows = x.numel() // N if N > 0 else 0
    if rows > 0:
        softmax_kernel[(rows,)](x, out, N, inner, COMPUTE_F64=(out.dtype == torch.float64),
                                BLOCK_N=triton.next_power_of_2(N))
    return out
