# A KernelBench-style generation written for kforge's import test (not from KernelBench):
# level 2 problem 5 (tanh then sigmoid), fused into one CUDA kernel built with load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

fused_header = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime.h>
"""

fused_body = r"""
template <typename scalar_t>
__device__ __forceinline__ scalar_t tanh_sigmoid(scalar_t v) {
    scalar_t t = tanh(v);
    return scalar_t(1) / (scalar_t(1) + exp(-t));
}

template <typename scalar_t>
__global__ void tanh_sigmoid_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += step) out[i] = tanh_sigmoid(in[i]);
}

torch::Tensor tanh_sigmoid_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    const at::cuda::OptionalCUDAGuard guard(device_of(x));
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 4096);
    auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "tanh_sigmoid_cuda", ([&] {
        tanh_sigmoid_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
            xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

fused_cpp = "torch::Tensor tanh_sigmoid_cuda(torch::Tensor x);"

tanh_sigmoid = load_inline(
    name="tanh_sigmoid",
    cpp_sources=fused_cpp,
    cuda_sources=fused_header + fused_body,
    functions=["tanh_sigmoid_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3", "--use_fast_math"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.op = tanh_sigmoid

    def forward(self, x):
        """Fused tanh and sigmoid."""
        return self.op.tanh_sigmoid_cuda(x.contiguous())
