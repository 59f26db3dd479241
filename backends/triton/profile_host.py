"""The Triton candidate host's profile mode (issue 21 §4): one candidate call for Nsight Compute,
as kforge-host --profile makes one for a cuda candidate (backends/host/profile_mode.cpp).

Usage (the `profile_setup` reply of kforge-runner, run under ncu by the profile step):
  python3 -I -B host.py --profile <kernel.py> <device> <tensor file> <libkforge_pyconfine.so>
                        <model.json> <Triton cache dir>

host.py's main() hands these arguments to profile_main(). It reads the tensor file the judge
wrote (the format of backends/host/host.hpp: a text header of `in`/`out` lines, `data`, the
inputs' raw bytes in the C ABI's order), places the inputs on the device, builds the judged
host's Host (torch, Triton and its warm-up kernel before confinement), confines itself and
imports the candidate exactly as `load` does (ModelNew included: model.json holds what the
judge's `model` line holds), then makes one untimed call (Triton's JIT, caches) and one call
between cudaProfilerStart and cudaProfilerStop (what `ncu --profile-from-start off` profiles),
and exits: 0 when both calls returned, 1 when the candidate failed (the reason on stderr), 2 on
bad arguments, a bad tensor file or a gate that never opened. Started ahead of its turn by the
profile step, it imports torch and Triton and then waits at its gate ($KFORGE_PROFILE_GATE,
wait_for_gate) before anything touches the device.

Confinement: the same as the judged host (no new privileges, no capabilities, the seccomp
filter, Landlock for writes) except what Nsight Compute needs, as for kforge-host's profile
mode: the socket calls stay open (ncu's injected library talks to ncu over a local socket) and
reads are not limited (that library reads where it likes); files may be created only beneath
$KFORGE_PROFILE_SCRATCH (ncu's lock file, Triton's cache). Nothing of the judge is in this
process: no channel, no key, no verdict. The native seal (libkforge_pyseal.so) is not started,
so nothing is recorded either: the profile decides nothing, and a candidate that disturbs its
own profile only misleads itself.
"""

import ctypes
import json
import os
import sys
import traceback


def read_tensor_file(path, kf_dtypes, torch, device):
    """(inputs, outputs) from a kforge tensor file: inputs filled from its data, outputs empty.
    Raises ValueError naming what is wrong."""
    with open(path, "rb") as f:
        if f.readline() != b"kforge-tensors 1\n":
            raise ValueError("not a kforge tensor file")
        lines = []
        while True:
            line = f.readline()
            if not line:
                raise ValueError("no data line")
            if line == b"data\n":
                break
            parts = line.decode(errors="replace").split()
            if len(parts) < 3 or parts[0] not in ("in", "out"):
                raise ValueError("bad line: " + line.decode(errors="replace").strip())
            dtype, ndim = int(parts[1]), int(parts[2])
            sizes = [int(s) for s in parts[3:]]
            if not 0 <= dtype < len(kf_dtypes) or len(sizes) != ndim or any(s < 0 for s in sizes):
                raise ValueError("bad line: " + line.decode(errors="replace").strip())
            lines.append((parts[0] == "in", getattr(torch, kf_dtypes[dtype]), sizes))
        ins, outs = [], []
        where = "cpu" if device < 0 else "cuda:%d" % device
        for is_input, dt, sizes in lines:
            if not is_input:
                outs.append(torch.empty(sizes, dtype=dt, device=where))
                continue
            numel = 1
            for s in sizes:
                numel *= s
            nbytes = numel * torch.empty(0, dtype=dt).element_size()
            data = bytearray(nbytes)
            if f.readinto(data) != nbytes:
                raise ValueError("the data ends early")
            t = torch.frombuffer(data, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
            ins.append(t.view(dt).view(sizes).to(where))
        return ins, outs


PROFILE_GATE_READY_LINE = "kforge: at the profile gate"


def wait_for_gate(max_wait_s=1800.0):
    """Started ahead of its turn by the profile step (issue 41 §4; the C++ side:
    backends/client/include/kforge/backends/profile_gate.hpp): imports torch and Triton, which
    touch no device, then waits until the file named by $KFORGE_PROFILE_GATE exists (the step
    holds the device's timed lock), polling every 2 ms, after printing PROFILE_GATE_READY_LINE on
    stdout. True at once when it is unset; False when the gate did not open within max_wait_s."""
    gate = os.environ.get("KFORGE_PROFILE_GATE", "")
    if not gate:
        return True
    import time
    try:
        import torch  # noqa: F401 - the Host imports them again, from sys.modules
        import triton  # noqa: F401
    except ImportError:
        pass  # the Host reports it
    # Its start-up is over: the step takes the device's timed lock only now (profile_gate.hpp's
    # kProfileGateReadyLine, printed before the candidate is loaded).
    sys.stdout.write(PROFILE_GATE_READY_LINE + "\n")
    sys.stdout.flush()
    until = time.monotonic() + max_wait_s
    while not os.path.exists(gate):
        if time.monotonic() >= until:
            return False
        time.sleep(0.002)
    return True


def profile_main(host_module, argv):
    """argv: host.py's, from "--profile" on (above). Returns the exit status."""
    if len(argv) != 8 or argv[1] != "--profile":
        sys.stderr.write("usage: host.py --profile <kernel.py> <device> <tensor file> <pyconfine.so> "
                         "<model.json> <Triton cache dir>\n")
        return 2
    artifact, device, tensor_file, confine_lib, model_file, triton_cache = (
        argv[2], int(argv[3]), argv[4], argv[5], argv[6], argv[7])
    os.dup2(2, host_module.CHANNEL)  # a seccomp violation is reported on fd 3: here, stderr
    import faulthandler
    faulthandler.enable(all_threads=True)
    lib = ctypes.CDLL(confine_lib)
    if lib.kf_py_prepare() != 0:  # killed with ncu, not dumpable
        return 2
    # As the judge's host_command and host_env set them (the driver compiles Triton's PTX and
    # keeps no cache it could not write once confined); the scratch directory is the profile step's.
    os.environ["USER"] = os.environ["LOGNAME"] = "kforge-candidate"
    os.environ["CUDA_CACHE_DISABLE"] = "1"
    scratch = os.environ.get("KFORGE_PROFILE_SCRATCH", "")
    if scratch:
        os.makedirs(os.path.join(scratch, "triton"), exist_ok=True)
        os.environ["KFORGE_TRITON_SCRATCH"] = os.path.join(scratch, "triton")
    if triton_cache and device >= 0:
        os.environ["TRITON_CACHE_DIR"] = triton_cache
    if device < 0:
        os.environ["TRITON_INTERPRET"] = "1"
    if not wait_for_gate():
        sys.stderr.write("host.py --profile: the profile gate never opened\n")
        return 2

    class ProfileHost(host_module.Host):
        profile_host = True

        def confine(self):
            """The judged host's confinement with what ncu needs (the module's docstring)."""
            fn = ctypes.CDLL(self.confine_lib).kf_py_confine_profile
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
            err = ctypes.create_string_buffer(1024)
            if fn(self.device, scratch.encode(), err, len(err)) != 0:
                return err.value.decode(errors="replace")
            return ""

    try:
        host = ProfileHost(artifact, device, confine_lib, os.open(artifact, os.O_RDONLY | os.O_CLOEXEC))
    except BaseException:  # noqa: B902
        sys.stderr.write("host.py --profile: init: " + traceback.format_exc())
        return 1
    try:
        ins, outs = read_tensor_file(tensor_file, host_module.KF_DTYPES, host.torch, device)
        if model_file and os.path.exists(model_file):
            with open(model_file) as f:
                host.model_spec = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write("host.py --profile: %s: %s\n" % (tensor_file, e))
        return 2
    host.sets[0] = (ins, outs)
    loaded = host.load([])
    if loaded != "ok":
        sys.stderr.write("host.py --profile: %s\n" % loaded)
        return 1
    torch = host.torch

    def call():
        if host.takes_out:
            host.entry(*ins, out=outs[0] if len(outs) == 1 else tuple(outs))
        else:
            host.entry(*ins)
        if device >= 0:
            torch.cuda.synchronize()

    try:
        call()  # untimed: Triton's JIT, caches, lazy loading
        if device >= 0:
            torch.cuda.profiler.start()
        try:
            call()  # the profiled call
        finally:
            if device >= 0:
                torch.cuda.profiler.stop()
    except BaseException:  # noqa: B902 - the candidate's failure
        sys.stderr.write("host.py --profile: the candidate failed:\n" + traceback.format_exc())
        return 1
    sys.stdout.write("kforge triton host: profiled one call\n")
    return 0
