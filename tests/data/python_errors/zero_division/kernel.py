import triton


def kf_forward(x, y):
    block = 0
    return triton.cdiv(1024, block) // block
