# Triton candidate (issue 22): a correct kernel that writes 2 MB to its log at import and a line
# per call. Its output is the candidate's to make; only the host's file-size cap (64 MiB, for its
# log and, on a GPU, Triton's cache in the scratch directory) limits it: a pass, not a sandbox kill.
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


for _ in range(2048):
    print("kforge log line " * 63 + "\n", end="")


def kf_forward(x, y):
    print("called")
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
