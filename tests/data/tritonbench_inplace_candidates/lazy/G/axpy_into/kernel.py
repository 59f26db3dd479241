# kforge's fixture: a candidate for G/axpy_into that does no work (it returns y unwritten). It
# must never be timed: the clone it returns differs from the reference's (tritonbench_perf.hpp).
import torch
import triton
import triton.language as tl


@triton.jit
def axpy_kernel(y_ptr, n, BLOCK: tl.constexpr):
    pass


def axpy_into(x, y, alpha):
    axpy_kernel[(1,)](y, y.numel(), BLOCK=128)
    return y
