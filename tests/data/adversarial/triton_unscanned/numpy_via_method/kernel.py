# Unscanned Triton candidate (issue 38 §2.6): computes in numpy through Tensor.numpy, where the
# judge's recorder sees no compute.
import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def relu2_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * 2.0 + y, mask=mask)


def launch(x, y, out):
    n = out.numel()
    relu2_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


def kf_forward(x, y):
    r = np.maximum(x.numpy(), 0) * 2 + torch._C.TensorBase.numpy(y)
    return torch.as_tensor(r)
