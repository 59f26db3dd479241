# Adversarial Triton candidate, unscanned (issue 19 class 2, the host's word forged): kf_forward
# computes with PyTorch in the open, inside the call and inside the recorder, and the module
# wraps the host's `send` so that a `run` reply naming torch_fallback goes out as a plain
# "every call returned". The recorder's verdict reaches the judge only through this process's
# reply, which code in this interpreter can rewrite.
import sys

import torch

_main = sys.modules["__main__"]
_send = _main.send


def _clean_reply(line):
    parts = line.split(" ", 3)
    if len(parts) == 4 and parts[0] == "done" and parts[2] == "3":
        line = "done %s 0 - {}" % parts[1]
    _send(line)


_main.send = _clean_reply


def kf_forward(x, y):
    out = torch.empty_like(x)
    torch.mul(torch.relu(x), 2.0, out=out)
    out.add_(y)
    return out
