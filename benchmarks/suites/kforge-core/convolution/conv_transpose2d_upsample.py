import torch
import torch.nn as nn

# 2x upsampling transposed convolution (kernel 4, stride 2, padding 1), as in
# DCGAN generators and UNet decoders: [N, Cin, H, W] -> [N, Cout, 2H, 2W].
BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1, bias=True)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
