import torch
import torch.nn as nn

# Row-wise logsumexp of logits with large per-row offsets (|offset| up to a few hundred):
# exp() of the raw values overflows or underflows fp32, so the result needs the max-shifted
# (or online) formulation, while the log-sum term still matters (the row max alone is wrong).
ROWS = 16384
COLS = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logsumexp(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 2.0 + torch.randn(ROWS, 1) * 100.0]


def get_init_inputs():
    return []
