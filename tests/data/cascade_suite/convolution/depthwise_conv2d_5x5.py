import os

import torch
import torch.nn as nn

# A reference that ends the judge's process while it loads (issue 21 §1): the worker dies in
# the middle of the request; the next task must be judged on a fresh one.
BATCH = 2
CHANNELS = 8
HEIGHT = 11
WIDTH = 13
KERNEL = 5


class Model(nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []


os._exit(3)
