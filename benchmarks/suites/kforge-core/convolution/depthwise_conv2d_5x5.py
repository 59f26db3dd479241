import torch
import torch.nn as nn

# Depthwise 5x5 convolution with bias, stride 1, "same" padding (MobileNet/ConvNeXt style).
BATCH = 32
CHANNELS = 256
HEIGHT = 64
WIDTH = 64
KERNEL = 5


class Model(nn.Module):
    def __init__(self, channels, kernel):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL]
