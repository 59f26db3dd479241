import triton


def kf_forward(x, y):
    out = x
      return out
