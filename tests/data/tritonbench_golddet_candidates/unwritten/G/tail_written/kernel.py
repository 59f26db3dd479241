import torch


def tail_double(x):
    # Writes nothing: every element is whatever torch.empty gave it.
    n = x.numel()
    return torch.empty(n + n // 2, device=x.device, dtype=x.dtype)
