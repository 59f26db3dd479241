import torch
import torch.nn as nn
import torch.nn.functional as F

# LayerNorm over the last dimension of a (ROWS, DIM) activation, with learned weight and bias.
ROWS = 32768
DIM = 2048
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.bias = nn.Parameter(0.1 * torch.randn(dim))

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


def get_inputs():
    # A non-zero mean per row, so a kernel that skips mean subtraction fails.
    return [torch.randn(ROWS, DIM) * 2.0 + torch.randn(ROWS, 1)]


def get_init_inputs():
    return [DIM, EPS]
