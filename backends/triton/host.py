"""kforge's Triton candidate host (docs/backends.md): the candidate side of the trust boundary
for Python candidates.

Usage (started by kforge-runner, never by hand):
  python3 -I -B host.py <kernel.py> <device: -1 cpu, N cuda ordinal> <first fd to close> <libkforge_pyconfine.so>

One process per candidate, like kforge-host: it speaks the same line protocol on descriptor 3
(arena, tensor, set, touch, load, run, quit; see backends/host/host_main.cpp), plus
  allow <op>[,<op>...]         ATen ops the task or the run allows besides allocation,
                               views and copies                                -> ok
and its `run` reply carries Python's view of a failure:
  done <seq> 0 - <json timings>                    every call returned; results are in the outputs
  done <seq> 1 python <json traceback>             an exception (the judge's client classifies it)
  done <seq> 2 store <kind> <json text>            a returned value of the wrong count, type,
                                                   dtype, shape or device, or aliasing an input
  done <seq> 3 torch_fallback <json op list>       compute ops outside the allow-list ran
A `run` of no sets does the fixed work of a run (the judge's calibration, before `load`).
The candidate is a module defining kf_forward(*inputs) with the inputs in the C ABI's order
(get_inputs(), then parameters, then buffers) that returns its output tensor(s); a
kf_forward with an `out` parameter gets the output tensors to write instead (then returning
None is fine).

Nothing this process says is trusted by the judge: it reads the outputs itself, checks inputs
bit for bit and times the calls from outside. The candidate's module is imported only after
the process has confined itself (libkforge_pyconfine.so: no new privileges, no capabilities,
the same seccomp filter and Landlock rules as kforge-host) and after backends/triton/ast_scan.py
has refused what a kernel has no use for. After `ready`, libkforge_pyseal.so (native, out of the
candidate's Python's reach) serves the protocol: it reads the judge's key (every reply carries
it, so lines the candidate writes on the channel are dropped), records every ATen op that
enters dispatch during a whole `run` (a claimed success becomes a torch_fallback when it saw
compute outside the allow-list) or a whole `testblock` (counted by the line of the test block,
which it compiles itself, that was running: the judge compares with the reference's counts),
and seals this interpreter with an
audit hook once the candidate's code executes (no ctypes, gc walks, trace functions, other
threads' frames or /proc files of a process). This module leaves sys.modules before that.

Timing: the judge's clock covers the whole `run`, from the moment it resumes this (frozen)
process to after its reply, when it freezes it again: the calls, the copies of what they
returned into the sets' outputs, and a device synchronisation. Nothing runs after "done" that
the judge does not time or check. So that returning a fresh tensor costs no copy, an allocation
inside kf_forward whose shape, strides, dtype and device are those of the set's next output
(torch.empty, empty_like, new_empty, empty_strided, zeros, ...: PyTorch's factory kernels;
contiguous) is handed the output's own memory, natively (libkforge_pyseal.so's out_slots, set
per call through self.set_slots): the tensor kf_forward returns then already is the output.
Triton's JIT runs on the first call, in the judge's warm-up.
"""

import ctypes
import json
import mmap
import os
import sys
import time
import traceback
import warnings

CHANNEL = 3

def _load_testblock():
    """testblock.py beside this file (the interpreter runs isolated: -I, no script directory on
    sys.path): TritonBench's test blocks, run the same way as in the judge."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "kforge_testblock", os.path.join(os.path.dirname(os.path.abspath(__file__)), "testblock.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TESTBLOCK = _load_testblock()

# Allocation, views, copies between the candidate's own buffers, fills. Everything else that
# computes is PyTorch doing the kernel's work (torch_fallback).
ALLOWED_OPS = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "zeros", "zeros_like", "new_zeros", "zero_", "ones", "ones_like", "new_ones",
    "full", "full_like", "new_full", "fill_", "fill",
    "copy_", "clone", "_to_copy", "contiguous", "lift_fresh", "lift_fresh_copy", "detach", "detach_", "alias",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose", "permute",
    "expand", "squeeze", "unsqueeze", "slice", "select", "unbind", "split", "split_with_sizes",
    "chunk", "narrow", "view_as", "flatten", "unflatten", "movedim", "set_", "resize_",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "record_stream",
    "view_as_real", "view_as_complex",  # complex tensors as (real, imaginary) pairs and back: views
    # A scalar read to the host (Tensor.item(), float(t), a Python `if` on a tensor): no compute
    # (issue 38 §3: R1's TritonBench-T logspace, G's nested_loops_processing gold). Reading
    # element by element stays refused by the scan (ast_scan.py: .item() in a loop, .tolist).
    "_local_scalar_dense",
}

# Commands whose argument is one JSON document (the rest of the line, unsplit).
JSON_COMMANDS = ("testsrc", "model")

# kf_dtype (backends/abi/kforge/kernel_abi.h) -> torch dtype name.
KF_DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int64", "bool", "uint8", "int8", "int16",
             "complex64", "complex128"]


def send(line):
    data = (line + "\n").encode()
    while data:
        n = os.write(CHANNEL, data)
        data = data[n:]


def one_line(text):
    return json.dumps(text)


def read_artifact(fd):
    """All the bytes of the descriptor `fd` from its start (the judge's sealed memfd)."""
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


class Host:
    # The profile mode's host (profile_host.py) stays root for Nsight Compute; its build helper
    # must be the same user (kf_py_confine_builder).
    profile_host = False

    def __init__(self, artifact, device, confine_lib, artifact_fd=-1):
        import tempfile

        import torch  # imported before confinement: reading its files then is not the candidate's doing
        import triton  # noqa: F401

        # Modules that torch imports lazily ask for a temporary directory, and tempfile finds
        # one by creating a file in it: asked now, the answer is cached before the filter
        # would stop that creation.
        tempfile.gettempdir()
        self.torch = torch
        self.artifact = artifact  # its name: the compiled code's filename (the seal's trigger)
        self.artifact_fd = artifact_fd  # its bytes: the judge's sealed memfd
        self.device = device
        self.confine_lib = confine_lib
        self.arenas = {}
        self.tensors = {}
        self.sets = {}
        self.format_exc = traceback.format_exc  # until serve: then the sealed one (native)
        self.test_code = None  # set by kf_seal_serve with each `testsrc`: the block it compiled
        self.entry = None
        self.takes_out = False
        self.results = {}
        self.module = None
        self.test = None
        self.model_spec = None

        # The output slots (libkforge_pyseal.so's set_slots, attached by kf_seal_serve): each call
        # of `run` may have its allocations handed the set's outputs, natively.
        self.set_slots = self.slots_taken = None
        use_dispatch_mode(torch)  # its first use imports torch._dynamo, which makes directories
        if device >= 0:
            if PRESTARTED.get("device") != device:
                prestart(device)
            self.touch_buf = torch.zeros(1, device="cuda")  # the context exists before confinement
            torch.cuda.synchronize()
            self.cuda = ctypes.CDLL("libcuda.so.1")
            self._warm_triton()

    def _warm_triton(self):
        """After prestart's first compile: the cache moves to the candidate's own scratch
        directory and ptxas runs in-process (a confined host starts no process)."""
        import triton
        # From here on Triton hands its PTX to the CUDA driver, which compiles it in this process
        # (cuModuleLoadData accepts PTX): ptxas would be a new process, which the filter stops.
        from triton.backends.nvidia import compiler as nvidia_compiler

        def make_cubin_in_process(backend, src, metadata, *args, **kwargs):
            return (src if isinstance(src, bytes) else src.encode()) + b"\0"

        nvidia_compiler.CUDABackend.make_cubin = make_cubin_in_process
        scratch = os.environ.get("KFORGE_TRITON_SCRATCH", "")
        if scratch:
            try:
                triton.knobs.cache.dir = scratch
            except AttributeError:
                pass
            os.environ["TRITON_CACHE_DIR"] = scratch
            import tempfile
            tempfile.tempdir = scratch  # Triton writes its launcher sources to a temporary directory
            self._start_build_helper(scratch)

    def _start_build_helper(self, scratch):
        """Triton (before 3.7) compiles a C launcher for each kernel signature with the system
        compiler. The confined host cannot start processes, so a helper forked now, before the
        candidate is imported (it holds nothing of the candidate's), runs Triton's own build
        for it: it may start the compiler but writes only beneath the scratch directory."""
        try:
            import triton.runtime.build as build
        except ImportError:
            return
        original = getattr(build, "_build", None)
        if original is None:
            return
        to_helper_r, to_helper_w = os.pipe()
        from_helper_r, from_helper_w = os.pipe()
        import warnings
        with warnings.catch_warnings():  # torch's threads are idle; the helper only builds
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the helper
            try:
                os.close(to_helper_w)
                os.close(from_helper_r)
                os.close(CHANNEL)
                lib = ctypes.CDLL(self.confine_lib)
                lib.kf_py_prepare()
                lib.kf_py_confine_builder.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                                      ctypes.c_char_p, ctypes.c_size_t]
                err = ctypes.create_string_buffer(512)
                if lib.kf_py_confine_builder(self.device, int(self.profile_host), scratch.encode(), err,
                                             len(err)) != 0:
                    os._exit(3)
                os.environ["TMPDIR"] = scratch
                reader = os.fdopen(to_helper_r, "r")
                for line in reader:
                    req = json.loads(line)
                    try:
                        reply = {"so": original(*req["args"], **req["kwargs"])}
                    except Exception as e:  # the candidate's kernel signature, not the judge's failure
                        reply = {"error": "%s: %s" % (type(e).__name__, e)}
                    os.write(from_helper_w, (json.dumps(reply) + "\n").encode())
            finally:
                os._exit(0)
        os.close(to_helper_r)
        os.close(from_helper_w)
        replies = os.fdopen(from_helper_r, "r")

        def build_through_helper(*args, **kwargs):
            os.write(to_helper_w, (json.dumps({"args": list(args), "kwargs": kwargs}) + "\n").encode())
            reply = json.loads(replies.readline() or '{"error": "the build helper is gone"}')
            if "error" in reply:
                raise RuntimeError("building Triton's launcher failed: " + reply["error"])
            return reply["so"]

        build._build = build_through_helper

    # --- protocol ------------------------------------------------------------------------
    def handle(self, line):
        parts = line.split()
        if not parts:
            return "err protocol empty line"
        cmd, args = parts[0], parts[1:]
        if cmd in JSON_COMMANDS:  # the JSON as sent: splitting would fold the source's indentation
            args = [line.split(None, 1)[1] if len(parts) > 1 else ""]
        handler = {
            "arena": self.arena, "tensor": self.tensor, "set": self.set_, "allow": self.allow,
            "touch": self.touch, "load": self.load, "run": self.run,
            "testsrc": self.testsrc, "testblock": self.testblock, "model": self.model,
        }.get(cmd)
        if handler is None:
            return "err protocol unknown command " + cmd
        try:
            return handler(args)
        except Exception as e:  # a malformed line from the judge, or a setup failure
            return "err protocol %s: %s" % (type(e).__name__, str(e).replace("\n", " "))

    def arena(self, a):
        torch = self.torch
        i, nbytes, where = int(a[0]), int(a[1]), a[2]
        if where == "host":
            fd, mode = int(a[3]), a[4]
            prot = mmap.PROT_READ | (mmap.PROT_WRITE if mode == "rw" else 0)
            mm = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED, prot=prot)
            os.close(fd)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a read-only input arena: writes fault, as intended
                self.arenas[i] = torch.frombuffer(mm, dtype=torch.uint8)
            self.arenas[i]._kforge_mmap = mm
            return "ok"
        handle = bytes.fromhex(a[3])
        if len(handle) != 64:
            return "err setup bad ipc handle"

        ptr, err = self._open_ipc_handle(handle)
        if err:
            return "err setup " + err

        class Interface:
            __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                        "version": 2}

        self.arenas[i] = torch.as_tensor(Interface(), device="cuda:%d" % self.device)
        return "ok"

    def _open_ipc_handle(self, handle):
        """Maps the judge's CUDA IPC allocation into this process's primary context: the CUDA
        runtime that torch loaded (cudaIpcOpenMemHandle), else the driver API."""

        class Handle(ctypes.Structure):
            _fields_ = [("reserved", ctypes.c_ubyte * 64)]

        h = Handle.from_buffer_copy(handle)
        ptr = ctypes.c_void_p(0)
        errors = []
        for path in self._cudart_paths():
            try:
                fn = ctypes.CDLL(path).cudaIpcOpenMemHandle
            except (OSError, AttributeError):
                continue
            fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), Handle, ctypes.c_uint]
            rc = fn(ctypes.byref(ptr), h, 1)  # cudaIpcMemLazyEnablePeerAccess
            if rc == 0:
                return ptr.value, ""
            errors.append("cudaIpcOpenMemHandle (%s): %d" % (os.path.basename(path), rc))
        fn = self.cuda.cuIpcOpenMemHandle_v2
        fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), Handle, ctypes.c_uint]
        dptr = ctypes.c_uint64(0)
        rc = fn(ctypes.byref(dptr), h, 1)  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
        if rc == 0:
            return dptr.value, ""
        errors.append("cuIpcOpenMemHandle: CUresult %d" % rc)
        return 0, "; ".join(errors)

    @staticmethod
    def _cudart_paths():
        seen = []
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "libcudart.so" in path and path not in seen:
                    seen.append(path)
        return seen

    def tensor(self, a):
        torch = self.torch
        tid, arena, offset, dtype, ndim = int(a[0]), int(a[1]), int(a[2]), int(a[3]), int(a[4])
        sizes = [int(s) for s in a[5:5 + ndim]]
        if arena not in self.arenas or not 0 <= dtype < len(KF_DTYPES):
            return "err setup bad tensor line"
        dt = getattr(torch, KF_DTYPES[dtype])
        numel = 1
        for s in sizes:
            numel *= s
        nbytes = numel * torch.empty(0, dtype=dt).element_size()
        base = self.arenas[arena]
        if offset < 0 or offset + nbytes > base.numel():
            return "err setup tensor outside its arena"
        self.tensors[tid] = base[offset:offset + nbytes].view(dt).view(sizes)
        return "ok"

    def set_(self, a):
        k, n_in = int(a[0]), int(a[1])
        ins = [self.tensors[int(t)] for t in a[2:2 + n_in]]
        n_out = int(a[2 + n_in])
        outs = [self.tensors[int(t)] for t in a[3 + n_in:3 + n_in + n_out]]
        self.sets[k] = (ins, outs)
        return "ok"

    def allow(self, a):
        return "ok"  # the allow-list is the native recorder's (kf_seal_serve reads the line)

    def touch(self, a):
        if self.device >= 0:
            self.touch_buf.zero_()
            self.torch.cuda.synchronize()
        return "touched"

    def confine(self):
        # What this interpreter may still read once confined, besides the system's directories:
        # its own module path and prefixes, and Triton's caches (the host limits reads to these).
        readable = [p for p in sys.path if p.startswith("/")] + [sys.prefix, sys.base_prefix]
        for name in ("torch", "triton", "numpy"):
            mod = sys.modules.get(name)
            if mod is not None and getattr(mod, "__file__", None):
                readable.append(os.path.dirname(os.path.dirname(os.path.abspath(mod.__file__))))
        readable += [os.environ.get(v, "") for v in ("TRITON_CACHE_DIR", "KFORGE_TRITON_SCRATCH")]
        os.environ["KFORGE_HOST_READABLE"] = ":".join(p for p in readable if p.startswith("/"))
        lib = ctypes.CDLL(self.confine_lib)
        lib.kf_py_confine.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        err = ctypes.create_string_buffer(1024)
        scratch = os.environ.get("KFORGE_TRITON_SCRATCH", "").encode()
        if lib.kf_py_confine(self.device, scratch, err, len(err)) != 0:
            return err.value.decode(errors="replace")
        return ""

    def model(self, a):
        """The reference model's get_init_inputs(), its state's names (the exchange's order, after
        the inputs) and its mode (JSON), before `load`: for a KernelBench ModelNew candidate."""
        self.model_spec = json.loads(a[0])
        return "ok"

    def build_model_new(self, cls):
        """KernelBench's form: ModelNew(*get_init_inputs()) with the reference's state. The state
        is bound, not copied: each parameter and buffer becomes the exchange's own tensor (as
        the judge writes it, perturbed trials included). Returns (entry, "") or (None, why)."""
        spec = self.model_spec
        if spec is None or spec.get("init") is None:
            return None, "this task cannot build a ModelNew (its get_init_inputs() is not plain data)"
        torch = self.torch
        model = cls(*spec["init"])
        if not isinstance(model, torch.nn.Module):
            return None, "ModelNew(*get_init_inputs()) is not a torch.nn.Module"
        model.train(spec.get("mode") == "train")
        if self.device >= 0:
            model = model.to("cuda:%d" % self.device)  # as KernelBench's harness does (.cuda())
        n = int(spec["inputs"])
        state = self.sets[0][0][n:] if 0 in self.sets else []
        names = [s[0] for s in spec["state"]]
        own = [k for k, _ in model.named_parameters()] + [k for k, _ in model.named_buffers()]
        if sorted(own) != sorted(names):
            return None, ("ModelNew's state %s does not match the reference model's %s (its state_dict() is "
                          "loaded unchanged)" % (sorted(own), sorted(names)))
        for (name, kind), t in zip(spec["state"], state):
            *path, leaf = name.split(".")
            sub = model
            for p in path:
                sub = getattr(sub, p)
            if kind == "parameter":
                sub._parameters[leaf] = torch.nn.Parameter(t, requires_grad=False)
            else:
                sub._buffers[leaf] = t

        def entry(*ins):
            return model(*ins[:n])
        return entry, ""

    def testsrc(self, a):
        """A TritonBench task: its test block, test function and the names the candidate must
        define (JSON), before `load`; the block runs later, over the candidate's module."""
        self.test = json.loads(a[0])
        import math  # noqa: F401 - what the block's launch count and fresh literals use, imported
        import random  # noqa: F401 - before the candidate's module runs (testblock.py)
        TESTBLOCK.Launches.classes()
        return "ok"

    def testblock(self, a):
        """Runs the test block (compiled by kf_seal_serve from the judge's `testsrc` line:
        self.test_code) in the candidate module's own namespace, as TritonBench runs a file whose
        test block follows its implementation (a gold function may use a name only the block
        imports: G/block_sparse_attn's torch), under torch.manual_seed(seed); the names the block
        binds are restored afterwards, so that every seed's run starts from the module as loaded.
        The tensor results go to set 0's outputs as `store` puts them; the others come back as
        JSON. Whether PyTorch compute ran is not decided here: kf_seal_serve arms its recorder
        for the whole request and puts its counts, by line of the block, into the reply."""
        seq, seed, fresh = a[0], int(a[1]), len(a) > 2 and a[2] == "fresh"
        if self.module is None or self.test is None or self.test_code is None:
            return "tested %s err protocol nothing loaded" % seq
        namespace = self.module.__dict__
        loaded = {n: namespace[n] for n in self.test_code.co_names if n in namespace}
        torch = self.torch
        # The entry points each call of which must launch a Triton kernel (the judge's list):
        # the names of those that returned without one go back to the judge.
        launches = TESTBLOCK.Launches(namespace, self.test.get("launch", []), strict=True)
        try:
            # Grad enabled, as TritonBench runs its test blocks (some call backward); fresh memory
            # padded and uninitialised memory poisoned as in the reference's runs (testblock.py
            # poisoned_allocations), so that a read past a tensor's end meets the same conditions
            # in both copies and unwritten memory shows as NaN, never as the reference's values.
            with torch.enable_grad(), TESTBLOCK.poisoned_allocations(0, torch), launches:
                leaves = TESTBLOCK.run(namespace, self.test["test"], self.test.get("function", ""), seed,
                                       "cpu" if self.device < 0 else "cuda", torch, code=self.test_code,
                                       fresh=fresh)
            if self.device >= 0:
                torch.cuda.synchronize()
        except BaseException:  # noqa: B902
            return "tested %s err python %s" % (seq, one_line(self.format_exc()))
        finally:  # the names the block binds, as loaded (Triton's interpreter adds its own: kept)
            for name in self.test_code.co_names:
                namespace.pop(name, None)
            namespace.update(loaded)
        tensors, others = TESTBLOCK.split(leaves, torch, "cpu" if self.device < 0 else "cuda:%d" % self.device)
        self.results[0] = tuple(tensors)
        try:
            err = self.store_set(0)
            if self.device >= 0:
                torch.cuda.synchronize()
        except BaseException:  # noqa: B902
            return "tested %s err python %s" % (seq, one_line(self.format_exc()))
        if err:
            return "tested %s err %s %s" % (seq, err[0], one_line(err[1]))
        return "tested %s ok %s %s" % (seq, json.dumps(sorted(launches.launchless), separators=(",", ":")), others)

    def load(self, a):
        import importlib.util
        import inspect
        import linecache
        # The judge's sealed copy (candidate_host.hpp sealed_artifact), read before confinement:
        # no path, so the run directory's mode never matters; run from memory (linecache holds
        # the lines Triton's jit reads). `err infra`: nothing of the candidate has run yet.
        try:
            source = read_artifact(self.artifact_fd)
        except OSError as e:
            return "err infra cannot read the artifact's descriptor %d: %s" % (self.artifact_fd, e)
        err = self.confine()
        if err:
            return "err confine " + err
        try:
            text = source.decode("utf-8", errors="replace")
            linecache.cache[self.artifact] = (len(text), None, text.splitlines(True), self.artifact)
            spec = importlib.util.spec_from_loader("kforge_candidate", loader=None, origin=self.artifact)
            module = importlib.util.module_from_spec(spec)
            module.__file__ = self.artifact
            sys.modules["kforge_candidate"] = module
            exec(compile(source, self.artifact, "exec"), module.__dict__)
        except BaseException:  # noqa: B902 - SystemExit included: the candidate's failure
            return "err load " + one_line(self.format_exc())
        self.module = module
        if self.test is not None:  # a TritonBench task: the names its test block calls
            missing = [n for n in self.test.get("entries", []) if n not in module.__dict__]
            if missing:
                return "err entry_point the module does not define %s" % ", ".join(missing)
            return "ok"
        entry = module.__dict__.get("kf_forward")
        if not callable(entry) and isinstance(module.__dict__.get("ModelNew"), type):
            try:
                with self.torch.no_grad():
                    entry, why = self.build_model_new(module.__dict__["ModelNew"])
            except BaseException:  # noqa: B902 - the candidate's constructor
                return "err load " + one_line(self.format_exc())
            if entry is None:
                return "err entry_point " + why
            self.entry, self.takes_out = entry, False
            return "ok"
        if not callable(entry):
            return "err entry_point the module defines no function kf_forward(*inputs) and no class ModelNew"
        try:
            self.takes_out = "out" in inspect.signature(entry).parameters
        except (TypeError, ValueError):
            self.takes_out = False
        self.entry = entry
        return "ok"

    def run(self, a):
        seq, ks = a[0], [int(k) for k in a[1:]]
        if not ks:  # the fixed work of a run (calibration): the slots set and cleared, work on
            self.set_slots(())  # the device (so the GPU switches to this context and back), a sync
            self.slots_taken()
            if self.device >= 0:
                self.touch_buf.zero_()
                self.torch.cuda.synchronize()
            return "done %s 0 - {}" % seq
        if self.entry is None or any(k not in self.sets for k in ks):
            return "err protocol no such set or nothing loaded"
        clock = time.perf_counter
        t0 = t1 = clock()
        try:
            try:
                for i, k in enumerate(ks):
                    ins, outs = self.sets[k]
                    self.set_slots(outs)
                    if self.takes_out:
                        self.results[k] = self.entry(*ins, out=outs[0] if len(outs) == 1 else tuple(outs))
                    else:
                        self.results[k] = self.entry(*ins)
                    if i == 0:
                        t1 = clock()
            finally:
                self.set_slots(())
            t2 = clock()
            # The copies run under the native recorder too (it is armed for the whole
            # request): compute moved into this step is a torch_fallback.
            for k in ks:
                err = self.store_set(k)
                if err:
                    self.results.clear()
                    return "done %s 2 store %s %s" % (seq, err[0], one_line(err[1]))
            if self.device >= 0:
                self.torch.cuda.synchronize()
        except BaseException:  # noqa: B902
            self.results.clear()
            return "done %s 1 python %s" % (seq, one_line(self.format_exc()))
        # Where the request's time went by this process's own clock: diagnostics the judge
        # reports as the candidate's side's, never used in a verdict or a time.
        ms = lambda a, b: round((b - a) * 1e3, 4)  # noqa: E731
        return "done %s 0 - %s" % (seq, json.dumps(
            {"first_call_ms": ms(t0, t1), "calls_ms": ms(t0, t2), "sync_ms": ms(t2, clock()),
             "slots_taken": self.slots_taken()}))

    @staticmethod
    def _unalias_outputs(got, outs):
        """A returned value that shares memory with another output (an allocation handed output
        i's memory, returned as output j) is cloned first, so that no copy overwrites a value
        still to be copied."""
        def span(t):
            return t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()
        fixed = []
        for j, g in enumerate(got):
            if not isinstance(g, type(outs[0])) or g.numel() == 0:
                fixed.append(g)
                continue
            lo, hi = span(g)
            shared = any(i != j and o.numel() > 0 and lo < span(o)[1] and span(o)[0] < hi
                         for i, o in enumerate(outs))
            fixed.append(g.clone() if shared else g)
        return tuple(fixed)

    def store_set(self, k):
        torch = self.torch
        ins, outs = self.sets[k]
        got = self.results.pop(k, None)
        if got is None and self.takes_out:
            return None
        got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
        if len(got) != len(outs):
            return ("count", "kf_forward returned %d value(s); the task has %d output(s)" % (len(got), len(outs)))
        spans = [(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in ins if t.numel() > 0]
        got = self._unalias_outputs(got, outs)
        for j, (g, o) in enumerate(zip(got, outs)):
            if type(g) is not torch.Tensor:
                return ("type", "output %d is a %s, not a torch.Tensor" % (j, type(g).__name__))
            if g.dtype != o.dtype:
                return ("dtype", "output %d has dtype %s; expected %s" % (j, g.dtype, o.dtype))
            if tuple(g.shape) != tuple(o.shape):
                return ("shape", "output %d has shape %s; expected %s" % (j, tuple(g.shape), tuple(o.shape)))
            if g.device != o.device:
                return ("device", "output %d is on %s; expected %s" % (j, g.device, o.device))
            if g.data_ptr() == o.data_ptr():
                continue  # written in place
            s = g.untyped_storage()
            lo, hi = s.data_ptr(), s.data_ptr() + s.nbytes()
            for i, (a, b) in enumerate(spans):
                if lo < b and a < hi:
                    return ("alias", "output %d shares memory with input %d (kf_forward must return "
                                     "new tensors, not its inputs or views of them)" % (j, i))
            o.copy_(g)
        return None


def reset_crash_handlers():
    """LLVM's crash handlers re-install the previous SIGSYS action when they run, which the
    confined host may not do (a candidate's crash would read as a forbidden call): the fatal
    signals go back to their default actions, behind Python's faulthandler alone."""
    import faulthandler
    import signal
    faulthandler.disable()
    for name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGQUIT", "SIGSYS",
                 "SIGXCPU", "SIGXFSZ", "SIGHUP", "SIGINT", "SIGTERM", "SIGUSR1", "SIGUSR2"):
        try:
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        except (AttributeError, OSError, ValueError):
            pass
    faulthandler.enable(all_threads=True)


# What prestart() did in this process: {"device": ordinal, "fds": the descriptors it opened}
# once it has run.
PRESTARTED = {}


def open_fds():
    """This process's open descriptors (not the one the listing itself used)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
            found.add(int(name))
        except OSError:
            pass
    return found


def close_from(first):
    """Closes every descriptor from `first` up but those prestart() opened: in a zygote's spare
    host those are the CUDA driver's (its device files, its threads' pipes), opened above the
    host's layout, and closing them would break the context under the driver (a host that
    hangs). A host that ran prestart() itself ran it after this, so keeps nothing extra."""
    keep = PRESTARTED.get("fds", set())
    if not keep:
        os.closerange(first, 1 << 16)
        return
    for fd in sorted(open_fds() - keep):
        if fd >= first:
            os.close(fd)


def prestart(device):
    """What Host() needs on a GPU that holds nothing of a candidate's session: CUDA initialised
    on `device` (the context made) and Triton's first compile, with its driver module, before
    confinement (they build and cache a launcher with the system compiler). Host() runs it, or
    a zygote's spare host (zygote.py) runs it while the judge checks the previous candidate, and
    Host() on the same device then skips it. Nothing for the cpu (device < 0)."""
    if device < 0:
        return
    import torch
    import triton
    import triton.language as tl

    before = open_fds()
    try:
        torch.cuda.set_device(device)
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()

        @triton.jit
        def _kforge_warm(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

        # Compiled every time, never from the cache: Triton's LLVM installs its crash handlers
        # (SIGSYS among them) on its first use in a process, and after confinement that would
        # be a forbidden sigaction at the candidate's first compile.
        always = os.environ.get("TRITON_ALWAYS_COMPILE")
        os.environ["TRITON_ALWAYS_COMPILE"] = "1"
        try:
            x = torch.zeros(16, device="cuda")
            _kforge_warm[(1,)](x, 16, BLOCK=16)
            torch.cuda.synchronize()
        finally:
            if always is None:
                os.environ.pop("TRITON_ALWAYS_COMPILE", None)
            else:
                os.environ["TRITON_ALWAYS_COMPILE"] = always
        reset_crash_handlers()
    finally:
        # Recorded even when a step failed: CUDA's descriptors may be open, and a spare host's
        # close_from must not close them under the driver (Host() then runs prestart again).
        PRESTARTED["fds"] = open_fds() - before
    PRESTARTED["device"] = device


def use_dispatch_mode(torch):
    """A dispatch mode entered once: its first use imports torch._dynamo, which makes
    directories (refused once the host is confined); a candidate's code may use one later."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Mode():
        torch.empty(1)


def warm_up():
    """What every host imports before Host() needs it, done once by the zygote
    (backends/triton/zygote.py) before it forks hosts: torch and Triton imported, a dispatch
    mode used once (its first use imports torch._dynamo). Nothing of a candidate; CUDA is not
    initialised (each forked host initialises it in Host())."""
    import tempfile  # noqa: F401

    import torch
    import triton  # noqa: F401
    import triton.language  # noqa: F401
    use_dispatch_mode(torch)
    if os.path.exists("/dev/nvidiactl"):
        warm_compiler()


def warm_compiler():
    """Triton's first compile costs about 0.6 s in a process (LLVM's set-up): Host() in a forked
    host took 1.0 s, and 0.35 s once the zygote had compiled before the fork (H100, issue 21).
    So the zygote compiles one tiny kernel for a fixed target (sm_80: which one does not matter
    for the set-up) without the CUDA driver, into a cache directory it then deletes; the forked
    host's own warm-up compile (_warm_triton, always compiled) then finds LLVM ready. A failure
    here costs only that time (the host compiles as before; the zygote's log says why); CUDA
    stays uninitialised, which the zygote checks before every fork."""
    import shutil
    import tempfile

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def _kforge_zygote_warm(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    saved = {k: os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE")}
    cache = None
    started = time.monotonic()
    try:
        cache = tempfile.mkdtemp(prefix="kforge-zygote-triton-")
        os.environ.update(TRITON_CACHE_DIR=cache, TRITON_ALWAYS_COMPILE="1")
        src = triton.compiler.ASTSource(fn=_kforge_zygote_warm, signature={
            "x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 16})
        triton.compile(src, target=GPUTarget("cuda", 80, 32))
        sys.stderr.write("kforge: Triton's compiler warmed in %.0f ms\n" % (1e3 * (time.monotonic() - started)))
    except Exception as e:  # noqa: BLE001 - only a lost speed-up; the host compiles as before
        sys.stderr.write("kforge: Triton's compiler not warmed: %s: %s\n" % (type(e).__name__, e))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if cache:
            shutil.rmtree(cache, ignore_errors=True)


def main(argv):
    if len(argv) > 1 and argv[1] == "--profile":  # one call for Nsight Compute: profile_host.py beside this
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "kforge_profile_host", os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile_host.py"))
        profile_host = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(profile_host)
        return profile_host.profile_main(sys.modules[__name__], argv)
    if len(argv) != 5:
        return 2
    close_from(int(argv[3]))  # nothing but what the judge gave (and a spare's prestart opened)
    import faulthandler
    faulthandler.enable(all_threads=True)  # a crash leaves its Python stack in the log the judge shows
    lib = ctypes.CDLL(argv[4])
    if lib.kf_py_prepare() != 0:  # death signal with the judge, not dumpable
        return 2
    try:
        host = Host(argv[1], int(argv[2]), argv[4], int(argv[3]) - 1)
    except BaseException:  # noqa: B902
        send("err init " + one_line(traceback.format_exc()))
        return 3
    try:
        config = seal_config(host)
        serve = ctypes.PyDLL(os.path.join(os.path.dirname(argv[4]), "libkforge_pyseal.so")).kf_seal_serve
        serve.argtypes = [ctypes.py_object, ctypes.py_object, ctypes.c_int]
        serve.restype = ctypes.c_int
    except BaseException:  # noqa: B902
        send("err init " + one_line(traceback.format_exc()))
        return 3
    send("ready")
    # From here the native loop speaks the protocol (each reply with the judge's key), records
    # PyTorch compute and seals the interpreter once the candidate's code runs. Nothing of the
    # host stays where the candidate's module could look it up by name.
    sys.modules.pop("__main__", None)
    return serve(host, config, CHANNEL)


def seal_config(host):
    """What kf_seal_serve needs, gathered before anything of the candidate runs: the base
    allow-list, the candidate's file, the device. Deletes, wherever gc finds them, the bindings
    that would switch PyTorch's RecordFunction off or clear its callbacks (the recorder is one)."""
    import gc
    torch = host.torch
    for name in ("_clear_callbacks", "_enable_record_function", "_set_empty_test_observer"):
        fn = getattr(torch._C._autograd, name, None)
        if fn is None:
            continue
        for holder in gc.get_referrers(fn):
            if isinstance(holder, dict):
                for key in [k for k, v in holder.items() if v is fn]:
                    del holder[key]
    return {"allowed": sorted(ALLOWED_OPS), "artifact": host.artifact, "device": host.device}


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
