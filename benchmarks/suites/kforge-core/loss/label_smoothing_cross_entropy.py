import torch
import torch.nn as nn
import torch.nn.functional as F

# Cross-entropy over a large vocabulary with label smoothing, mean over the batch
# (language-model / classifier training loss). Returns a 0-dim tensor.
BATCH = 4096
CLASSES = 32000
SMOOTHING = 0.1


class Model(nn.Module):
    def __init__(self, smoothing):
        super().__init__()
        self.smoothing = smoothing

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, label_smoothing=self.smoothing)


def get_inputs():
    # A random per-call logit scale, so the batch-mean loss differs clearly between trials.
    logits = torch.randn(BATCH, CLASSES) * (1.0 + 3.0 * torch.rand(()))
    target = torch.randint(0, CLASSES, (BATCH,))
    return [logits, target]


def get_init_inputs():
    return [SMOOTHING]
