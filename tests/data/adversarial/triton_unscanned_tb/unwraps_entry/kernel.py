# Attack: its entry point runs PyTorch compute, and it reaches the test block's namespace
# through its caller's frame, so as to be called there unwrapped. Before the recorder counted
# the whole block by line, only calls through the host's `recorded` wrapper were armed: the
# first call rebinds the name in the block's namespace to a plain PyTorch function, whose later
# calls ran unrecorded. Now every op of the request is counted, by the block's line that was
# running, against what the reference's block runs there: torch_fallback.
import sys

import torch


def _plain(input, scale=2.0, out=None):
    return torch.relu(input) * scale


def relu_scale(input, scale=2.0, out=None):
    frame = sys._getframe(1)
    while frame is not None:
        if "relu_scale" in frame.f_globals and frame.f_globals.get("relu_scale") is not _plain:
            frame.f_globals["relu_scale"] = _plain
        frame = frame.f_back
    return _plain(input, scale)
