# kforge Triton exemplar (index): embedding lookup, out[i, :] = weight[ids[i], :].
# Inputs: ids (int64), then embedding.weight [VOCAB, DIM].
import torch
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(ids_ptr, w_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < dim
    idx = tl.load(ids_ptr + i).to(tl.int64)
    tl.store(out_ptr + i * dim + cols, tl.load(w_ptr + idx * dim + cols, mask=mask), mask=mask)


def kf_forward(ids, weight):
    ids = ids.contiguous()
    dim = weight.shape[1]
    out = torch.empty(ids.shape + (dim,), dtype=weight.dtype, device=weight.device)
    BLOCK = 256
    embedding_kernel[(ids.numel(), triton.cdiv(dim, BLOCK))](ids, weight.contiguous(), out, dim, BLOCK=BLOCK)
    return out
