import torch
import torch.nn as nn

# Attention probabilities of a decoder: scale the raw scores, mask future keys
# (key index > query index) with -inf, softmax over keys. Masked entries are exactly 0.
BATCH = 16
HEADS = 16
SEQ = 512
HEAD_DIM = 64


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, scores):
        s = scores.shape[-1]
        future = torch.triu(torch.ones(s, s, dtype=torch.bool, device=scores.device), diagonal=1)
        return torch.softmax((scores * self.scale).masked_fill(future, float("-inf")), dim=-1)


def get_inputs():
    return [torch.randn(BATCH, HEADS, SEQ, SEQ) * 8.0]


def get_init_inputs():
    return [HEAD_DIM]
