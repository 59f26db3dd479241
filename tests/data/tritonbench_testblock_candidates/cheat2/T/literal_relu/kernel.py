# An adversarial candidate for the fixture task T/literal_relu (issue 38 section 2.4): computes
# in Python on values read with tolist() (no PyTorch compute op, no Triton kernel).
import torch


def literal_relu(input):
    values = input.reshape(-1).tolist()
    return torch.tensor([v if v > 0 else 0.0 for v in values], dtype=input.dtype,
                        device=input.device).reshape(input.shape)
