# Attack: computes the answers in PyTorch inside a function the test block itself calls
# (torch.tensor, patched at load), stashes them, and returns the stash from its entry point,
# which then runs no op at all. A recorder armed only around the entry points never saw the
# compute. Counted by line, the compute lands on the block's torch.tensor lines, where the
# reference's block ran only the tensor's creation: torch_fallback.
import torch

_stash = {}
_tensor = torch.tensor


def _patched(*args, **kwargs):
    t = _tensor(*args, **kwargs)
    if t.is_floating_point():
        for scale in (2.0, 0.5):
            _stash[(t.data_ptr(), scale)] = torch.relu(t) * scale
    return t


torch.tensor = _patched


def relu_scale(input, scale=2.0, out=None):
    return _stash[(input.data_ptr(), scale)]
