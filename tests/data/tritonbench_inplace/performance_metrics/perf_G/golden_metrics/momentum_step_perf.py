# kforge's fixture: a performance script in the form of TritonBench's (performance_metrics/perf_G/
# golden_metrics/<name>_perf.py) for an operation that works in place, as adam_update_triton's:
# call_op updates p and buf and returns None. Small sizes for Triton's interpreter on the CPU.
import sys
import os

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))

from TritonBench_v1.momentum_step import update_fn
from performance_utils import Performance_Metrics, do_bench_config

import torch
import triton
import triton.language as tl

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('momentum_step', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(8, 11):
            size = 2 ** i
            p = torch.rand(size, dtype=torch.float32)
            grad = torch.rand(size, dtype=torch.float32)
            buf = torch.rand(size, dtype=torch.float32)
            self.input_tensors.append((p, grad, buf))

    def to_cuda(self, input_tensor):
        p, grad, buf = input_tensor
        return (p.cuda(), grad.cuda(), buf.cuda())

    def call_op(self, input_tensor):
        p, grad, buf = input_tensor
        update_fn(p, grad, buf, 0.01, 0.9)

    def get_gbps(self, input_tensor, runtime):
        p, grad, buf = input_tensor
        total_bytes = 5 * p.numel() * p.element_size()
        GBPS = total_bytes / (runtime / 1000) / 1e9
        return GBPS

    def get_tflops(self, input_tensor, runtime):
        p, grad, buf = input_tensor
        FLOPS = 4 * p.numel()
        TFLOPS = FLOPS / (runtime / 1000) / 1e12
        return TFLOPS

if __name__ == '__main__':
    op_perf = performance_metrics()
    op_perf.get_input_tensors()
    op_perf.get_do_bench_config()
    op_perf.run_benchmark()
