import torch


def kf_forward(x, y):
    scratch = torch.empty((1 << 40,), device=x.device)
    return scratch
