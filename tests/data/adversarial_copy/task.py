import torch
import torch.nn as nn

# Fixture task for the copy-engine timing case (tests/unit/test_runner.cpp, "[.gpu]"): the whole
# answer is one device-to-device copy of 4 MiB (below any recent GPU's L2, so the speed-of-light
# bound does not apply). A candidate that only issues cudaMemcpyAsync does the reference's own
# work; were its copies carried out by a copy engine while the judge's lead-in kernel still held
# the GPU, they would finish before the judge's clock starts and read as a large speedup.
N = 1024
D = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clone()


def get_inputs():
    return [torch.randn(N, D, dtype=torch.float32)]


def get_init_inputs():
    return []
