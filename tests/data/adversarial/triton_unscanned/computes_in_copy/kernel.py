# Adversarial Triton candidate, unscanned (issue 19 class 2, the host's protocol in the
# candidate's interpreter): kf_forward returns an empty tensor at once, and the real PyTorch
# compute runs in the host's own copying step (Host.store_set, wrapped through the host's
# module), which before the judge froze the host at its reply was the untimed `store` request
# (issue 19 measured 1.34x over the reference with no timed work). Besides the compute the
# step sleeps SLEEP_S per call: a stand-in for hidden work whose charge shows above any noise
# (a sleep is never shorter than asked; timed, every call reads at least half of it). The host's
# module is no longer in sys.modules (the reply loop is native): the wrap fails at load.
import sys
import time

import torch

SLEEP_S = 0.05
_Host = sys.modules["__main__"].Host
_store_set = _Host.store_set


def _compute_then_store(self, k):
    ins, outs = self.sets[k]
    x, y = ins[0], ins[1]
    out = self.results.get(k)
    if isinstance(out, torch.Tensor) and out.shape == x.shape:
        torch.mul(torch.relu(x), 2.0, out=out)
        out.add_(y)
        time.sleep(SLEEP_S)
    return _store_set(self, k)


_Host.store_set = _compute_then_store


def kf_forward(x, y):
    return torch.empty_like(x)
