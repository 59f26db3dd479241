# Adversarial Triton candidate, unscanned (issue 19 class 2, the recorder switched off): before
# its PyTorch compute, kf_forward tries every Python route to PyTorch's RecordFunction, on which
# the native recorder hangs: the bindings that disable it or clear its callbacks (under every
# name torch exports them), the profiler's start and stop, and ctypes to call at::clearCallbacks
# in libtorch directly. The bindings are deleted before the candidate exists, the sealed
# interpreter refuses ctypes, and a profiler session adds and removes only its own callbacks.
import torch


def _try(fn):
    try:
        fn()
    except Exception:
        pass


def _bindings():
    for holder in (torch._C._autograd, torch.autograd):
        for name in ("_clear_callbacks", "_enable_record_function"):
            f = getattr(holder, name, None)
            if f is not None:
                f() if name == "_clear_callbacks" else f(False)


def _profiler():
    with torch.autograd.profiler.profile():
        pass


def _ctypes():
    import ctypes
    lib = ctypes.CDLL(torch._C.__file__.replace("_C.", "lib/libtorch_cpu.").rsplit("/", 1)[0] + "/libtorch_cpu.so")
    getattr(lib, "_ZN2at14clearCallbacksEv")()


for _f in (_bindings, _profiler, _ctypes):
    _try(_f)


def kf_forward(x, y):
    for f in (_bindings, _profiler, _ctypes):
        _try(f)
    out = torch.empty_like(x)
    torch.mul(torch.relu(x), 2.0, out=out)
    out.add_(y)
    return out
