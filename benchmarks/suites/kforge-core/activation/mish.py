import torch
import torch.nn as nn
import torch.nn.functional as F

# Mish, x * tanh(softplus(x)), over an NCHW feature map (YOLOv4-style backbones).
BATCH = 32
CHANNELS = 128
HEIGHT = 128
WIDTH = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return []
