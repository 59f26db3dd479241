import torch
import torch.nn as nn
import torch.nn.functional as F

# Causal dilated 1-D convolution (WaveNet / TCN layer): left-pad by dilation * (k - 1)
# so that output t only sees inputs <= t; output length equals input length.
BATCH = 8
CHANNELS = 128
LENGTH = 16384
KERNEL = 3
DILATION = 4


class Model(nn.Module):
    def __init__(self, channels, kernel, dilation):
        super().__init__()
        self.pad = dilation * (kernel - 1)
        self.conv = nn.Conv1d(channels, channels, kernel, dilation=dilation, bias=True)

    def forward(self, x):
        return self.conv(F.pad(x, (self.pad, 0)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, KERNEL, DILATION]
