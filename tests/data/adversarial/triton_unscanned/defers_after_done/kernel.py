# Adversarial Triton candidate, unscanned (issue 19 class 1, work after "done"): the module
# reaches the host's own module and wraps its `send`, so that the reply to `run` goes out first
# and the PyTorch compute runs after it (row by row, the last row last), where the judge's clock
# would already have stopped and its output read would not wait for it. kf_forward itself only
# allocates (the allocation is handed the output's memory) and queues the work.
import sys

import torch

_main = sys.modules["__main__"]
_send = _main.send
_pending = []


def _send_then_compute(line):
    _send(line)
    while _pending:
        x, y, out = _pending.pop(0)
        for r in range(out.shape[0]):
            torch.mul(torch.relu(x[r]), 2.0, out=out[r])
            out[r].add_(y[r])


_main.send = _send_then_compute


def kf_forward(x, y):
    out = torch.empty_like(x)
    _pending.append((x, y, out))
    return out
