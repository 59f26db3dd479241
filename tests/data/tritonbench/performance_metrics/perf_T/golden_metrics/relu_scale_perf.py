# kforge's fixture: a performance script in the form of TritonBench's (performance_metrics/perf_T/
# golden_metrics/<name>_perf.py), written for kforge's tests (issue 22 section 4); small sizes, so
# that Triton's interpreter on the CPU gets through it.
import sys
import os
import json

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))

from TorchBench_v1.relu_scale import relu_scale
from performance_utils import Performance_Metrics, do_bench_config

import torch
import triton
import triton.language as tl

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('relu_scale', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(8, 11):
            size = 2 ** i
            input_tensor = torch.randn(size, dtype=self.dtype)
            self.input_tensors.append((input_tensor, 0.5 * i))

    def to_cuda(self, input_tensor):
        x, scale = input_tensor
        return (x.cuda(), scale)

    def call_op(self, input_tensor):
        x, scale = input_tensor
        return relu_scale(x, scale)

    def get_gbps(self, input_tensor, runtime):
        x, _ = input_tensor
        total_bytes = x.numel() * x.element_size() * 2
        GBPS = total_bytes / (runtime / 1000) / 1e9
        return GBPS

    def get_tflops(self, input_tensor, runtime):
        x, _ = input_tensor
        FLOPS = 2 * x.numel()
        TFLOPS = FLOPS / (runtime / 1000) / 1e12
        return TFLOPS

if __name__ == '__main__':
    op_perf = performance_metrics()
    op_perf.get_input_tensors()
    op_perf.get_do_bench_config(warmup=100, rep=1000)
    op_perf.run_benchmark()
