# Adversarial Triton candidate, unscanned (issue 19 class 2, the host's word forged): kf_forward
# computes with PyTorch in the open and then writes its own "every call returned" reply on the
# host's channel (descriptor 3) before the host can answer, and tries to wrap the host's reply
# function as well. The reply loop is native (libkforge_pyseal.so) and signs every reply with the
# judge's key, which this interpreter never holds: the forged line is dropped, and the host
# module is not in sys.modules to be wrapped.
import os
import sys

import torch

_main = sys.modules.get("__main__")
if _main is not None and hasattr(_main, "send"):
    _send = _main.send

    def _clean_reply(line):
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[0] == "done" and parts[2] == "3":
            line = "done %s 0 - {}" % parts[1]
        _send(line)

    _main.send = _clean_reply

_seq = [0]


def kf_forward(x, y):
    out = torch.empty_like(x)
    torch.mul(torch.relu(x), 2.0, out=out)
    out.add_(y)
    for seq in range(1, 200):  # the judge's request numbers are small and sequential
        try:
            os.write(3, ("done %d 0 - {}\n" % seq).encode())
        except OSError:
            break
    return out
