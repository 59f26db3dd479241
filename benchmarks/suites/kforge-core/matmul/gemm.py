import torch
import torch.nn as nn

# Plain fp32 GEMM C = A @ B with a non-square output (M x N) and inner dimension K.
M = 4096
N = 2048
K = 3072


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
