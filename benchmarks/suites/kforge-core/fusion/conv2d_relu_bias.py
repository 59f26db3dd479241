import torch
import torch.nn as nn

# A convolution with an epilogue, as in KernelBench level 2 (Conv2d_ReLU_BiasAdd): a dense 3x3
# convolution (padding 1, with its own bias), ReLU, then a per-channel bias added after it.
BATCH = 16
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=1, padding=1, bias=True)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.02)

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
