import torch
import torch.nn as nn

# Fixture task for the tiny-calls timing case (tests/unit/test_triton_backend.cpp, "[.gpu]"):
# relu of 4096 floats, one kernel launch a call on either side, so an honest candidate's speedup
# is about 1. A window of such calls is shorter than the noise of its fixed part (the host's
# reply), so readings scatter both ways (TritonBench-T relu's input 0, the same size, once read
# 0.27 us a call against the reference's 1.76 us); one below half of the judge's launch floor is
# a timing_anomaly, never credited.
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(N, dtype=torch.float32)]


def get_init_inputs():
    return []
