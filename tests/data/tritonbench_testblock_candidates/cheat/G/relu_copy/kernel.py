# An adversarial candidate for the fixture task G/relu_copy (issue 38 section 2.4): PyTorch's
# relu, an op the gold itself runs (so the op counts allow it), and no Triton kernel.
import torch


def relu_copy(x):
    return torch.relu(x).clone()
