# Adversarial (issue 38 §2.6): the test block may turn results into numpy arrays; the candidate's
# own code may not. This one computes in numpy, where the judge's recorder sees no compute, and
# launches a Triton copy so that the launch rule alone does not catch it.
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def double_it(x):
    doubled = torch.as_tensor(x.cpu().numpy() * 2.0).to(x.device)
    out = torch.empty_like(x)
    n = x.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](doubled, out, n, BLOCK=256)
    return out
