# An adversarial candidate for the fixture task T/allowed_relu (issue 38 section 2.4): PyTorch's
# own relu, on a task whose test block runs torch.relu on the very line that calls it (the op
# counts by line allow it there); no Triton kernel launched.
import torch


def allowed_relu(input):
    return torch.relu(input)
