# kforge gold-equivalent Triton candidate for TritonBench-T sub
import torch
import triton
import triton.language as tl


@triton.jit
def sub_kernel(x_ptr, y_ptr, out_ptr, n, y_scalar, alpha, Y_IS_SCALAR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out_ty = out_ptr.dtype.element_ty
    x = tl.load(x_ptr + offs, mask=mask).to(out_ty)
    if Y_IS_SCALAR:
        y = y_scalar
    else:
        y = tl.load(y_ptr + offs, mask=mask).to(out_ty)
    tl.store(out_ptr + offs, (x - alpha * y).to(out_ty), mask=mask)


def _broadcast_shape(a, b):
    shape = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and 1 not in (da, db):
            raise RuntimeError("shapes %s and %s are not broadcastable" % (tuple(a), tuple(b)))
        shape.append(db if da == 1 else da)
    return tuple(reversed(shape))


def sub(input: torch.Tensor, other: torch.Tensor, *, alpha: float=1, out: torch.Tensor=None) -> torch.Tensor:
    if isinstance(other, torch.Tensor):
        shape = _broadcast_shape(input.shape, other.shape)
        same = input.dtype == other.dtype
        out_dtype = input.dtype if same else torch.promote_types(input.dtype, other.dtype)
        x = input.expand(shape).contiguous()
        y = other.expand(shape).contiguous()
        y_scalar = 0.0
    else:
        shape = tuple(input.shape)
        floating = input.is_floating_point() or not isinstance(other, float)
        out_dtype = input.dtype if floating else torch.get_default_dtype()
        x = input.contiguous()
        y, y_scalar = x, other
    if out is None:
        out = torch.empty(shape, dtype=out_dtype, device=input.device)
    n = out.numel()
    if n > 0:
        BLOCK = 1024
        sub_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, y_scalar, alpha,
                                             Y_IS_SCALAR=not isinstance(other, torch.Tensor), BLOCK=BLOCK)
    return out
