import torch
import torch.nn as nn
import torch.nn.functional as F

# LLaMA-style feed-forward block: x + W_down(silu(W_gate(rmsnorm(x))) * W_up(rmsnorm(x))),
# with a learned RMSNorm weight and bias-free projections.
BATCH = 4
SEQ = 512
DIM = 1024
HIDDEN = 2816
EPS = 1e-6


class Model(nn.Module):
    def __init__(self, dim, hidden, eps):
        super().__init__()
        self.eps = eps
        self.norm_weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.w_gate = nn.Linear(dim, hidden, bias=False)
        self.w_up = nn.Linear(dim, hidden, bias=False)
        self.w_down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.norm_weight
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN, EPS]
