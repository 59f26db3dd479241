# Adversarial Triton candidate, unscanned (issue 19 class 3, the recording bypassed): inside
# kf_forward the module takes the host's dispatch mode off the mode stack for the duration of
# its PyTorch compute (torch's own helper, which pushes it back afterwards), so the recorder
# sees only the allocation.
import torch
from torch.utils._python_dispatch import _pop_mode_temporarily


def kf_forward(x, y):
    out = torch.empty_like(x)
    with _pop_mode_temporarily():
        torch.mul(torch.relu(x), 2.0, out=out)
        out.add_(y)
    return out
