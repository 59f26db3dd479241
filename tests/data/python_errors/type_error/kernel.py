import triton


def kf_forward(x, y):
    return x
