import triton
import triton.language as tl


def kf_forward(x, y):
    out = torch.empty_like(x)
    return out
