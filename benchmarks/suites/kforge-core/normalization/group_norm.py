import torch
import torch.nn as nn
import torch.nn.functional as F

# GroupNorm on an NCHW feature map (diffusion-UNet style): statistics over each group of
# CHANNELS // GROUPS channels and all spatial positions, then a per-channel affine.
BATCH = 32
CHANNELS = 256
HEIGHT = 64
WIDTH = 64
GROUPS = 32
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, channels, groups, eps):
        super().__init__()
        self.groups = groups
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))

    def forward(self, x):
        return F.group_norm(x, self.groups, self.weight, self.bias, self.eps)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + torch.randn(BATCH, CHANNELS, 1, 1)]


def get_init_inputs():
    return [CHANNELS, GROUPS, EPS]
