import torch
import torch.nn as nn

# A reference that breaks the judge's interpreter (issue 21 §1): loading it replaces
# nn.Module.__call__, which every later task's reference goes through, and then fails. On a
# worker that is not replaced, every task after this one would fail to load.
BATCH = 64
CHANNELS = 128
HEIGHT = 96
WIDTH = 96


def _broken_call(self, *args, **kwargs):
    raise RuntimeError("nn.Module.__call__ was replaced by an earlier task's reference")


class Model(nn.Module):
    def forward(self, x, scale, shift):
        return x * (1.0 + scale[:, :, None, None]) + shift[:, :, None, None]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH), torch.randn(BATCH, CHANNELS), torch.randn(BATCH, CHANNELS)]


def get_init_inputs():
    return []


nn.Module.__call__ = _broken_call
raise RuntimeError("this reference breaks the worker's torch and cannot be used")
