import torch
import torch.nn as nn

# torch.gather along the last dimension: out[r, j] = x[r, index[r, j]], with random
# (unsorted, repeating) column indices per row.
ROWS = 8192
COLS = 8192
PICKS = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, index):
        return torch.gather(x, 1, index)


def get_inputs():
    return [torch.randn(ROWS, COLS), torch.randint(0, COLS, (ROWS, PICKS))]


def get_init_inputs():
    return []
