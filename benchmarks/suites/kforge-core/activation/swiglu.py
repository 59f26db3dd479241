import torch
import torch.nn as nn
import torch.nn.functional as F

# SwiGLU gate of a LLaMA-style MLP: the input holds [gate | up] along the last
# dimension (one fused projection); the output is silu(gate) * up.
TOKENS = 8192
HIDDEN = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(TOKENS, 2 * HIDDEN)]


def get_init_inputs():
    return []
