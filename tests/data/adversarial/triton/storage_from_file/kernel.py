# Adversarial Triton candidate (issue 38 §2.6): a storage class reads a file (an answer left by an
# earlier run) into a tensor past the recorded API.
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
    stored = torch.UntypedStorage.from_file("/tmp/kforge_answer.bin", False, x.numel() * 4)
    return torch.tensor([], dtype=x.dtype).set_(stored).view_as(x).to(x.device)
