# kforge's fixture: a performance script in the form of TritonBench's (performance_metrics/perf_G/
# golden_metrics/<name>_perf.py) for an operation that works in place, as bgmv_shrink_kernel's:
# call_op returns the input it writes. Small sizes for Triton's interpreter on the CPU.
import sys
import os

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))

from TritonBench_v1.axpy_into import axpy_into
from performance_utils import Performance_Metrics, do_bench_config

import torch
import triton
import triton.language as tl

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('axpy_into', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(8, 11):
            size = 2 ** i
            x = torch.rand(size, dtype=torch.float32)
            y = torch.rand(size, dtype=torch.float32)
            self.input_tensors.append((x, y, 0.5))

    def to_cuda(self, input_tensor):
        x, y, alpha = input_tensor
        return (x.cuda(), y.cuda(), alpha)

    def call_op(self, input_tensor):
        x, y, alpha = input_tensor
        return axpy_into(x, y, alpha)

    def get_gbps(self, input_tensor, runtime):
        x, y, alpha = input_tensor
        total_bytes = 3 * x.numel() * x.element_size()
        GBPS = total_bytes / (runtime / 1000) / 1e9
        return GBPS

    def get_tflops(self, input_tensor, runtime):
        x, y, alpha = input_tensor
        FLOPS = 2 * x.numel()
        TFLOPS = FLOPS / (runtime / 1000) / 1e12
        return TFLOPS

if __name__ == '__main__':
    op_perf = performance_metrics()
    op_perf.get_input_tensors()
    op_perf.get_do_bench_config(warmup=100, rep=1000)
    op_perf.run_benchmark()
