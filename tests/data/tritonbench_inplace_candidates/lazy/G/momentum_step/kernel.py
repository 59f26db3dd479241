# kforge's fixture: a candidate for G/momentum_step that does no work (it returns without
# updating p or buf). It must never be timed: the clones it leaves unchanged differ from the
# reference's updated ones (tritonbench_perf.hpp, "in place").
import torch
import triton
import triton.language as tl


@triton.jit
def momentum_kernel(p_ptr, n, BLOCK: tl.constexpr):
    pass


def update_fn(p, grad, buf, lr, beta):
    momentum_kernel[(1,)](p, p.numel(), BLOCK=128)
