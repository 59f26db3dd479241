# Adversarial Triton candidate, unscanned (issue 19 class 2, the host's objects reached): the
# module looks for the host's Python objects through every route from its own code (frames from
# sys._getframe, a traceback's and a generator's frames, gc's object walk, the host's module by
# name) to replace the host's `recorded` wrapper and its results before they reach the native
# reply loop. Frames are reachable (PyTorch needs sys._getframe), gc walks are refused and the
# host module is not in sys.modules; whatever it replaces, `run` is served by the native loop,
# armed natively for the whole request: the compute in kf_forward is recorded.
import gc
import sys

import torch

found = []


def _frames():
    f = sys._getframe()
    while f is not None:
        found.append(f.f_locals.get("self"))
        f = f.f_back


def _traceback():
    try:
        raise ValueError
    except ValueError as e:
        f = e.__traceback__.tb_frame
        while f is not None:
            found.append(f.f_locals.get("self"))
            f = f.f_back


def _generator():
    def g():
        yield 1
    f = g().gi_frame
    while f is not None:
        found.append(f.f_locals.get("self"))
        f = f.f_back


def _gc():
    found.extend(o for o in gc.get_objects() if type(o).__name__ == "Host")


def _main():
    found.append(sys.modules["__main__"])


for _f in (_frames, _traceback, _generator, _gc, _main):
    try:
        _f()
    except Exception:
        pass

for host in found:
    if host is not None and hasattr(host, "handle"):
        try:
            host.recorded = lambda fn: fn
            host.handle = lambda line: "done 1 0 - {}"
        except Exception:
            pass


def kf_forward(x, y):
    out = torch.empty_like(x)
    torch.mul(torch.relu(x), 2.0, out=out)
    out.add_(y)
    return out
