import torch
import torch.nn as nn

# Test fixture written for kforge's loader tests.
BATCH = 8
DIM = 16
HIDDEN = DIM * 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
