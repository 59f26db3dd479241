# Adversarial Triton candidate: returns a view of an input without writing anything. No write
# faults or changes an input; only the host's aliasing check (the returned tensor's storage
# overlaps an input's) names it.
import torch


def kf_forward(x, y):
    return y.view_as(y)
