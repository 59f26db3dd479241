import torch
import torch.nn as nn

# Fixture task for kforge's adversarial kernels (tests/data/adversarial/manifest.json).
# y is drawn from [1, 2), so every output element is >= 1: an output left at zero, at its
# poison value or at garbage never matches by accident.
N = 256
D = 512


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x) * 2 + y


def get_inputs():
    x = torch.randn(N, D, dtype=torch.float32)
    y = torch.rand(N, D, dtype=torch.float32) + 1.0
    return [x, y]


def get_init_inputs():
    return []
