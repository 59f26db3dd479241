# Adversarial Triton candidate, unscanned (issue 19 classes 1 and 3, a thread): kf_forward returns
# an empty tensor (handed the output's memory) and leaves a thread that writes the output with
# PyTorch once the call has returned and the host has answered (it waits 0.1 s first: the host
# replies within about a millisecond of the return). The recording is the calling thread's, and
# the work would run after the judge's clock stopped.
import threading
import time

import torch


def _late(x, y, out):
    time.sleep(0.1)
    torch.mul(torch.relu(x), 2.0, out=out)
    out.add_(y)


def kf_forward(x, y):
    out = torch.empty_like(x)
    threading.Thread(target=_late, args=(x, y, out), daemon=True).start()
    return out
