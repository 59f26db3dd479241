# Adversarial Triton candidate (an allowance, issue 22 §1): host helpers the scan lets through, none of
# which can fool the judge: logging/warnings to stderr, time, contextlib, functools.wraps/partial,
# dataclasses, enum, a module-scope seed (the judge seeds after the import), torch.nn's _pair,
# a module variable named input, a global constant config. A correct kernel: it must pass.
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
import contextlib
import dataclasses
import enum
import functools
import logging
import time
import warnings

from torch.nn.modules.utils import _pair

torch.manual_seed(0)
log = logging.getLogger("kernel")
input = None  # a module variable named like the builtin
_BLOCK = 1024


class Mode(enum.Enum):
    FAST = 1


@dataclasses.dataclass
class Launch:
    block: int
    mode: Mode = Mode.FAST


def _timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        r = fn(*args, **kwargs)
        log.debug("launch took %.6f s", time.perf_counter() - t0)
        return r
    return wrapper


@_timed
def launch(x, y, out, cfg):
    global _BLOCK
    _BLOCK = 1024 if out.numel() >= 1024 else 128
    n = out.numel()
    relu2_add_kernel[(triton.cdiv(n, _BLOCK),)](x, y, out, n, BLOCK=_BLOCK)


def kf_forward(x, y):
    if x.dim() == 0:
        warnings.warn("scalar input")
    assert _pair(2) == (2, 2)
    out = torch.empty_like(x)
    with contextlib.nullcontext():
        functools.partial(launch, cfg=Launch(_BLOCK))(x, y, out)
    return out
