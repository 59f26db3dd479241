# Adversarial Triton candidate, unscanned (issue 19 class 1, work after "done"): the module
# reaches the host's own module and wraps its `send`, so that the reply to `run` goes out first
# and the PyTorch compute runs after it (row by row, the last row last), where the judge's clock
# would already have stopped and its output read would not wait for it. kf_forward itself only
# allocates (the allocation is handed the output's memory) and queues the work. Where the host's
# module is out of reach (it is: the reply loop is native and __main__ is not in sys.modules),
# the queued work runs in a thread started as kf_forward returns instead.
import sys
import threading

import torch

_main = sys.modules.get("__main__")
_send = getattr(_main, "send", None)
_pending = []


def _send_then_compute(line):
    _send(line)
    while _pending:
        x, y, out = _pending.pop(0)
        for r in range(out.shape[0]):
            torch.mul(torch.relu(x[r]), 2.0, out=out[r])
            out[r].add_(y[r])


if _send is not None:
    _main.send = _send_then_compute


def _compute_later():
    while _pending:
        x, y, out = _pending.pop(0)
        for r in range(out.shape[0]):
            torch.mul(torch.relu(x[r]), 2.0, out=out[r])
            out[r].add_(y[r])


def kf_forward(x, y):
    out = torch.empty_like(x)
    _pending.append((x, y, out))
    if _send is None:
        threading.Timer(0.001, _compute_later).start()
    return out
