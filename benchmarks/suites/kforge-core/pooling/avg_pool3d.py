import torch
import torch.nn as nn
import torch.nn.functional as F

# 3-D average pooling of a volumetric feature map (NCDHW): 3x3x3 window, stride 2,
# padding 1, with padded positions excluded from the divisor (count_include_pad=False),
# so border windows divide by fewer than 27.
BATCH = 8
CHANNELS = 32
DEPTH = 64
HEIGHT = 64
WIDTH = 64
KERNEL = 3
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    def __init__(self, kernel, stride, padding):
        super().__init__()
        self.kernel = kernel
        self.stride = stride
        self.padding = padding

    def forward(self, x):
        return F.avg_pool3d(x, self.kernel, self.stride, self.padding, count_include_pad=False)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, DEPTH, HEIGHT, WIDTH) + 1.0]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
