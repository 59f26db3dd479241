import torch
import torch.nn as nn

# Row-wise top-k (largest, sorted descending) over a wide vocabulary dimension, returning
# values and int64 column indices, as in top-k sampling or MoE routing.
ROWS = 4096
COLS = 16384
K = 32


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        values, indices = torch.topk(x, self.k, dim=-1, largest=True, sorted=True)
        return values, indices


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return [K]
