import triton
import cupy


def kf_forward(x, y):
    return x
