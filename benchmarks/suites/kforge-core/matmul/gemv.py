import torch
import torch.nn as nn

# Matrix-vector product y = W x with a large fp32 matrix: memory-bound, W is streamed once.
M = 16384
K = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, w, x):
        return torch.mv(w, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []
