# A candidate that calls the operator it implements: torch_fallback (kforge's operator-suite test).
import torch


def relu_kernel_impl(x):
    return torch.relu(x)
