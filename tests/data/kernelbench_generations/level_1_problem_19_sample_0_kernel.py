# A KernelBench-style generation written for kforge's import test (not from KernelBench):
# the CUDA source is built with an f-string, so it is not self-contained.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

BLOCK = 256
relu_src = f"""
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {{
    int i = blockIdx.x * {BLOCK} + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}}
torch::Tensor relu_cuda(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_kernel<<<(n + {BLOCK} - 1) / {BLOCK}, {BLOCK}>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}}
"""

relu = load_inline(name="relu", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                   cuda_sources=relu_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def forward(self, x):
        return relu.relu_cuda(x)
