import torch
import torch.nn as nn

# FiLM / adaLN-style modulation of an NCHW feature map: every (sample, channel)
# plane is scaled by (1 + scale[n, c]) and shifted by shift[n, c].
BATCH = 64
CHANNELS = 128
HEIGHT = 96
WIDTH = 96


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, scale, shift):
        return x * (1.0 + scale[:, :, None, None]) + shift[:, :, None, None]


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)
    scale = torch.randn(BATCH, CHANNELS) * 0.5
    shift = torch.randn(BATCH, CHANNELS)
    return [x, scale, shift]


def get_init_inputs():
    return []
