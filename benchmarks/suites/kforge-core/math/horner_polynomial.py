import torch
import torch.nn as nn

# Evaluate the polynomial sum_k coeffs[k] * x^k elementwise with Horner's rule
# (activation approximations, special-function fits). Eager PyTorch runs one pair of
# kernels per degree.
SIZE = 16777216
DEGREE = 8


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, coeffs):
        y = torch.zeros_like(x) + coeffs[-1]
        for k in range(coeffs.shape[0] - 2, -1, -1):
            y = y * x + coeffs[k]
        return y


def get_inputs():
    x = torch.rand(SIZE) * 2.0 - 1.0
    coeffs = torch.randn(DEGREE + 1)
    return [x, coeffs]


def get_init_inputs():
    return []
