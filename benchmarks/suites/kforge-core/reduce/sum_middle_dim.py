import torch
import torch.nn as nn

# Sum over the middle dimension of a (BATCH, REDUCE, COLS) tensor: a strided reduction in
# which the reduced elements are COLS apart in memory.
BATCH = 32
REDUCE = 1024
COLS = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


def get_inputs():
    return [torch.randn(BATCH, REDUCE, COLS)]


def get_init_inputs():
    return []
