# Attack: runs its PyTorch compute on another thread (the recorder of `run` was thread-local
# once; a thread of its own has no frame of the test block on its stack). The recorder is
# global and counts such ops "outside the block", where the reference's block ran none:
# torch_fallback.
import threading

import torch


def relu_scale(input, scale=2.0, out=None):
    box = {}

    def work():
        box["y"] = torch.relu(input) * scale

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return box["y"]
