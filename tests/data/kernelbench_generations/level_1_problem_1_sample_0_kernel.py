# A KernelBench-style generation written for kforge's import test (not from KernelBench):
# level 1 problem 1 (x + x) as a scaled copy, with a number argument, the module called directly,
# load_inline's name and sources passed by position.
import torch
import torch.nn as nn
import torch.utils.cpp_extension

scale_src = """
#include <torch/extension.h>

template <typename T>
__global__ void scale_kernel(const T* a, T* c, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * s;
}

torch::Tensor scale_cuda(torch::Tensor a, double s) {
    auto c = torch::zeros({a.size(0), a.size(1)}, a.options());
    int n = a.numel();
    scale_kernel<float><<<(n + 127) / 128, 128>>>(a.data_ptr<float>(), c.data_ptr<float>(), (float)s, n);
    return c;
}
"""

scale = torch.utils.cpp_extension.load_inline(
    "scale",
    ["torch::Tensor scale_cuda(torch::Tensor a, double s);"],
    [scale_src],
    functions=["scale_cuda"],
)


class ModelNew(nn.Module):
    def forward(self, x):
        return scale.scale_cuda(x, 2.0)
