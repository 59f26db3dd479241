import torch
import torch.nn as nn
import torch.nn.functional as F

# The ResNet stem max-pool: 3x3 window, stride 2, padding 1 (padding never wins the max).
BATCH = 64
CHANNELS = 64
HEIGHT = 112
WIDTH = 112
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
        return F.max_pool2d(x, self.kernel, self.stride, self.padding)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [KERNEL, STRIDE, PADDING]
