import torch
import torch.nn as nn
import torch.nn.functional as F

# Nearest-neighbour upsampling of an NCHW feature map by an integer factor (FPN / decoder style).
BATCH = 16
CHANNELS = 64
HEIGHT = 128
WIDTH = 128
SCALE = 2


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return F.interpolate(x, scale_factor=self.scale, mode="nearest")


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [SCALE]
