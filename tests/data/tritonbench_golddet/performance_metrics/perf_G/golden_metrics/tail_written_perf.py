# kforge's fixture: a performance script in the form of TritonBench's (performance_metrics/perf_G/
# golden_metrics/<name>_perf.py) for the tail_written gold, which leaves the first third of its
# result unwritten (torch.empty): its performance call is timed, and a candidate verified where
# the gold writes (issue 22 sections 2 and 4). Small sizes, for Triton's interpreter on the CPU.
import sys
import os
import json

sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), '..')))

from TritonBench_v1.tail_written import tail_double
from performance_utils import Performance_Metrics, do_bench_config

import torch
import triton
import triton.language as tl

class performance_metrics(Performance_Metrics):
    def __init__(self, dtype=None, is_backward=False, **kwargs):
        super().__init__('tail_written', dtype=dtype, is_backward=is_backward, **kwargs)

    def get_input_tensors(self):
        self.input_tensors = []
        for i in range(8, 11):
            self.input_tensors.append(torch.randn(2 ** i, dtype=torch.float32))

    def to_cuda(self, input_tensor):
        return input_tensor.cuda()

    def call_op(self, input_tensor):
        return tail_double(input_tensor)

    def get_gbps(self, input_tensor, runtime):
        total_bytes = input_tensor.numel() * input_tensor.element_size() * 2
        return total_bytes / (runtime / 1000) / 1e9

    def get_tflops(self, input_tensor, runtime):
        return 2 * input_tensor.numel() / (runtime / 1000) / 1e12

if __name__ == '__main__':
    op_perf = performance_metrics()
    op_perf.get_input_tensors()
    op_perf.get_do_bench_config(warmup=100, rep=1000)
    op_perf.run_benchmark()
