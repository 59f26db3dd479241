import torch
import torch.nn as nn

# Scatter-add of rows (out-of-place index_add along dim 0): out = base, then
# out[index[t]] += src[t] for every t. About TOKENS / ROWS source rows land on each output
# row, in random order, as in embedding-gradient or MoE-combine accumulation.
ROWS = 8192
TOKENS = 65536
DIM = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, base, index, src):
        return base.index_add(0, index, src)


def get_inputs():
    return [torch.randn(ROWS, DIM), torch.randint(0, ROWS, (TOKENS,)), torch.randn(TOKENS, DIM)]


def get_init_inputs():
    return []
