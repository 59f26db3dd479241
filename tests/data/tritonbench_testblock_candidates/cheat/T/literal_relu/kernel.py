# An adversarial candidate for the fixture task T/literal_relu (issue 38 section 2.5): answers
# stored by input shape, for the literals its test block writes; a Triton kernel launched on
# every call (a no-op), so that only the judge's fresh literal inputs can catch it.
import torch
import triton
import triton.language as tl

_ANSWERS = {
    (4,): [0.0, 0.0, 1.0, 2.5],
    (2, 2): [[0.0, 2.0], [3.0, 0.0]],
    (2, 3): [[0.0, 2.0, 0.0], [4.0, 0.0, 6.0]],
}


@triton.jit
def _noop(o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(o_ptr + offs))


def literal_relu(input):
    out = torch.tensor(_ANSWERS[tuple(input.shape)], dtype=input.dtype, device=input.device)
    _noop[(1,)](out, BLOCK=1)
    return out
