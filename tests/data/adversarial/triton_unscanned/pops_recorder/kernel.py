# Adversarial Triton candidate, unscanned (issue 19 class 3, the recording bypassed): inside
# kf_forward the module takes every dispatch mode off the mode stack for the duration of its
# PyTorch compute (torch's own helper, which pushes them back afterwards), so a recorder that
# were such a mode would see only the allocation.
import contextlib

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode_temporarily


def kf_forward(x, y):
    out = torch.empty_like(x)
    with contextlib.ExitStack() as stack:
        for _ in _get_current_dispatch_mode_stack():
            stack.enter_context(_pop_mode_temporarily())
        torch.mul(torch.relu(x), 2.0, out=out)
        out.add_(y)
    return out
