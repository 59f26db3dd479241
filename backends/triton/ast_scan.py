#!/usr/bin/env python3
"""kforge's static scan of a Triton candidate module, run before the module is imported.

Usage: python3 -I ast_scan.py KERNEL.py   (never imports the candidate)
       python3 -I ast_scan.py --serve CPU_SECONDS   (warm: one scan per path read from stdin)

Prints one JSON object on stdout:
  {"version": 1, "syntax_error": null | {"type", "message", "line", "offset", "text"},
   "findings": [{"rule", "line", "col", "what", "why"}, ...], "resolution": "..."}
and exits 0 whenever the file could be read and parsed or its syntax error reported; 2 on a
usage or read error (message on stderr).

A Triton candidate is a module whose kf_forward(*inputs) allocates outputs with torch and
launches @triton.jit kernels. Everything else a module can do is either harmless or a way to
escape the judge: to reach the process, the file system or the network; to switch off or fool
the runtime's recording of PyTorch compute; to compute where the recording cannot see (numpy,
Python arithmetic on tensor data, other threads); or to return an answer kept from an earlier
call. The runtime checks (dispatch recording, fresh inputs per trial, output aliasing) decide
what only running can tell; this scan rejects what reading can tell. It judges uses, not
imports: logging, warnings, time, contextlib, functools.partial/wraps, dataclasses, enum,
typing, math and numpy on host constants reach nothing the judge depends on; what reaches
processes, the network, files, frames or other threads, or keeps results across calls, is
refused, and each rule says why.

Resolution (every path to a module is that module):
- Import aliases are followed (`import triton.language as tl`, `from torch.cuda import Stream as
  S`), and so are module-level aliases of a module (`F = torch.nn.functional`).
- An attribute chain rooted at an allowed module (torch, triton, numpy, logging, ...) is
  resolved against the installed packages (this process imports torch and triton; never the
  candidate): every module object the chain passes through is judged by its real name, so
  `torch.sys`, `torch.os`, `triton.runtime.build.subprocess` and `logging.os` are `sys`, `os`
  and `subprocess`; a chain the installed package does not have reaches nothing (it fails at
  run time with AttributeError) and is not a finding. Where torch or triton cannot be imported
  the chain is judged by its literal names only (and the static rules below still hold).
- Whatever the receiver (a call's result, a subscript, a parameter), an attribute named like a
  forbidden module (`.sys`, `.os`, `.threading`, `.builtins`, `.ctypes`, `.gc`, ...), a frame
  attribute (`.f_back`, `.tb_frame`, ...), `.numpy`, `.tolist` or a dunder is refused.
- A module is only ever used through attribute access: a module name or chain used as a value
  (`[torch][0]`, `f(torch)`, `x = torch.nn`) is refused, so no module reaches a place where its
  attributes are not checked.
- The scan does not evaluate code: a name built at run time (getattr with a computed string,
  __import__, exec, operator.attrgetter) is itself a finding, which keeps the resolution sound.

What the scan does not see: compute through torch's public API (the runtime's dispatch
recording decides torch_fallback), values a kernel reads through scalars (`.item()` outside
loops, `float(t)`: each is an ATen call the recording sees), and behaviour of Triton kernels
themselves.
"""

import ast
import importlib
import inspect
import json
import os
import sys
import types

# --- What a kernel module may import ------------------------------------------------------
# triton and triton.language (with submodules) write the kernel; torch allocates outputs and
# views; the rest serve the host code around a launch and reach nothing the judge depends on
# (each one's harmful members are refused by FORBIDDEN_PATHS below):
#   math, typing, __future__, dataclasses, enum, abc, collections, itertools, copy: constants,
#     annotations and plain data structures (state kept in them is judged by the state rules);
#   logging, warnings: messages to the host's stderr (file and socket handlers refused);
#   time: clocks and sleep; the judge's clock is not in the candidate's reach and
#     `time.perf_counter = ...` is a module_attribute_write;
#   contextlib: context managers; functools: partial, wraps, reduce (caches refused);
#   operator: arithmetic functions (attrgetter/methodcaller refused);
#   numpy: host constants (dtypes, pi, products of shapes); numpy on anything that may hold
#     tensor data is host_compute.
ALLOWED_MODULES = {"triton", "triton.language", "torch", "math", "typing", "__future__", "logging",
                   "warnings", "time", "contextlib", "functools", "dataclasses", "enum", "abc",
                   "collections", "collections.abc", "itertools", "copy", "operator", "numpy"}
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
# Roots whose attribute chains are resolved against the installed package.
RESOLVED_ROOTS = {"torch", "triton", "numpy", "logging", "warnings", "time", "contextlib", "functools",
                  "dataclasses", "enum", "typing", "math", "collections", "itertools", "copy", "operator",
                  "abc"}

# Modules refused with a named rule (the rest of the standard library and third-party modules
# are refused by "import_not_allowed").
FORBIDDEN_MODULES = {
    "subprocess": ("process", "starts processes"),
    "_posixsubprocess": ("process", "starts processes"),
    "multiprocessing": ("process", "starts processes (compute the judge's recorder cannot see)"),
    "pty": ("process", "starts processes"),
    "os": ("os_access", "reaches the process, its environment and the file system"),
    "posix": ("os_access", "reaches the process, its environment and the file system"),
    "nt": ("os_access", "reaches the process, its environment and the file system"),
    "sys": ("os_access", "reaches sys.modules (the host's own modules), the interpreter and its streams"),
    "shutil": ("file_access", "reads and writes files"),
    "pathlib": ("file_access", "reads and writes files"),
    "tempfile": ("file_access", "writes files"),
    "io": ("file_access", "opens files"),
    "_io": ("file_access", "opens files"),
    "glob": ("file_access", "lists files"),
    "mmap": ("file_access", "maps files and memory"),
    "socket": ("network", "opens network connections"),
    "_socket": ("network", "opens network connections"),
    "ssl": ("network", "opens network connections"),
    "http": ("network", "opens network connections"),
    "urllib": ("network", "opens network connections"),
    "requests": ("network", "opens network connections"),
    "ctypes": ("native_code", "calls native code and reads raw memory"),
    "_ctypes": ("native_code", "calls native code and reads raw memory"),
    "cffi": ("native_code", "calls native code"),
    "importlib": ("dynamic_import", "imports modules by computed names"),
    "builtins": ("dynamic_import", "reaches __import__, exec and open under other names"),
    "runpy": ("dynamic_import", "runs other modules"),
    "gc": ("introspection", "finds the judge's live objects (tensors, references)"),
    "inspect": ("introspection", "reads frames, callers and their locals"),
    "traceback": ("introspection", "reads frames"),
    "threading": ("concurrency", "runs work on another thread, where the judge's recorder (thread-local) "
                                 "does not look, or after the timed call"),
    "_thread": ("concurrency", "runs work on another thread, outside the recording and the timed call"),
    "concurrent": ("concurrency", "runs work on other threads or processes, outside the recording and "
                                  "the timed call"),
    "asyncio": ("concurrency", "runs work outside the timed call"),
    "signal": ("signal", "changes signal handling (timeouts)"),
    "atexit": ("signal", "runs code at interpreter exit"),
    "pickle": ("serialization", "runs code while loading data"),
    "marshal": ("serialization", "loads code objects"),
    "shelve": ("serialization", "runs code while loading data"),
    "weakref": ("introspection", "keeps references to the judge's objects"),
    "copyreg": ("serialization", "changes how objects are rebuilt"),
    "code": ("dynamic_code", "runs source text"),
    "codeop": ("dynamic_code", "compiles source text"),
    "types": ("dynamic_code", "builds functions and code objects"),
}

# Attribute names refused whatever the receiver (a module re-exported under another module, a
# call's result, a subscript): the names of FORBIDDEN_MODULES that are no ordinary attribute
# names. (`types`, `code`, `signal` and `io` are: torch.types and torch.signal are torch's own;
# those are judged by resolution only.)
MODULE_ATTRIBUTE_NAMES = {m for m in FORBIDDEN_MODULES if m not in ("types", "code", "signal", "io")}

# Attribute names of frames, tracebacks and generators: each reaches a frame and its globals
# (the caller's: the judge's code in the same interpreter).
FRAME_ATTRIBUTES = {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next",
                    "gi_frame", "cr_frame", "ag_frame", "gi_code", "cr_code", "_getframe", "currentframe"}

# Attribute names that move tensor data to the host where Python or numpy computes on it: the
# judge's recorder sees ATen calls, and these read memory without one.
HOST_DATA_ATTRIBUTES = {
    "numpy": "copies tensor data into numpy, where compute is invisible to the judge's recorder",
    "tolist": "copies tensor data into Python lists, where arithmetic on it is invisible to the judge's "
              "recorder (pass sizes as ints: x.shape, x.numel())",
    "untyped_storage": "reads a tensor's raw storage past the recorded API",
    "storage": "reads a tensor's raw storage past the recorded API",
}

# Builtins with no place in a kernel. A name the module binds itself (a module-level
# assignment, a parameter, a local) is not the builtin.
FORBIDDEN_BUILTINS = {
    "open": ("file_access", "opens files"),
    "input": ("file_access", "reads stdin"),
    "__import__": ("dynamic_import", "imports modules by computed names"),
    "exec": ("dynamic_code", "runs source text the scan cannot read"),
    "eval": ("dynamic_code", "runs source text the scan cannot read"),
    "compile": ("dynamic_code", "builds code the scan cannot read"),
    "globals": ("introspection", "reads and writes the module's namespace by name"),
    "locals": ("introspection", "reads a frame's namespace by name"),
    "vars": ("introspection", "reads an object's namespace by name"),
    "breakpoint": ("introspection", "enters a debugger"),
    "memoryview": ("native_code", "reads raw memory"),
}

_DIST = ("network", "opens connections to other processes (only the queries and collectives that "
                    "need no process group, which none can create, are allowed)")

# Dotted paths (after alias resolution) and why they are refused; a path is refused when it
# equals one of these or starts with one of them followed by ".". ALLOWED_PATHS (below) are
# exceptions to these prefixes and to the private-API rule.
FORBIDDEN_PATHS = {
    # PyTorch's dispatch machinery: these switch off or fool the recording of compute.
    "torch.ops": ("torch_internals", "calls ATen operators past the recorded Python API"),
    "torch.library": ("torch_internals", "registers or overrides operator kernels"),
    "torch.overrides": ("torch_internals", "overrides torch functions"),
    "torch.utils._python_dispatch": ("torch_internals", "pushes or pops dispatch modes"),
    "torch.utils.cpp_extension": ("native_code", "compiles and loads native code"),
    "torch.utils.dlpack": ("torch_internals", "shares memory past the judge's tensors"),
    "torch.to_dlpack": ("torch_internals", "shares memory past the judge's tensors"),
    "torch.from_dlpack": ("torch_internals", "shares memory past the judge's tensors"),
    "torch.fx": ("torch_internals", "rewrites graphs with PyTorch's compiler"),
    "torch.compile": ("torch_codegen", "generates the kernel with PyTorch's compiler, not Triton"),
    "torch.jit": ("torch_codegen", "compiles with TorchScript (and torch.jit.fork runs work on other threads)"),
    "torch.export": ("torch_codegen", "compiles with PyTorch's exporter"),
    # Host compute the recording cannot see.
    "torch.from_numpy": ("host_compute", "turns numpy results (compute the judge's recorder cannot see) "
                                         "into a tensor"),
    "torch.futures": ("concurrency", "runs callbacks outside the timed call"),
    "torch.utils.data": ("process", "starts worker processes and threads"),
    # Streams and graphs: work outside the stream the judge times, replayed results.
    "torch.cuda.Stream": ("cuda_stream", "runs work on a stream the judge does not time"),
    "torch.cuda.ExternalStream": ("cuda_stream", "runs work on a stream the judge does not time"),
    "torch.cuda.stream": ("cuda_stream", "switches the current stream"),
    "torch.cuda.StreamContext": ("cuda_stream", "switches the current stream"),
    "torch.cuda.current_stream": ("cuda_stream", "takes the stream the judge set to use it elsewhere"),
    "torch.cuda.default_stream": ("cuda_stream", "runs work on a stream the judge does not time"),
    "torch.cuda.set_stream": ("cuda_stream", "switches the current stream"),
    "torch.Stream": ("cuda_stream", "runs work on a stream the judge does not time"),
    "torch.cuda.graph": ("cuda_graph", "replays recorded work instead of computing"),
    "torch.cuda.graphs": ("cuda_graph", "replays recorded work instead of computing"),
    "torch.cuda.CUDAGraph": ("cuda_graph", "replays recorded work instead of computing"),
    "torch.cuda.make_graphed_callables": ("cuda_graph", "replays recorded work instead of computing"),
    # Files, processes, network through torch.
    "torch.load": ("file_access", "reads files (and runs pickled code)"),
    "torch.save": ("file_access", "writes files"),
    "torch.from_file": ("file_access", "reads files"),
    "torch.hub": ("network", "downloads code"),
    "torch.multiprocessing": ("process", "starts processes"),
    "torch.distributed": _DIST,
    # Process-wide settings that change the judge's numerics.
    "torch.set_default_dtype": ("torch_global_setting", "changes the judge's default dtype"),
    "torch.set_default_device": ("torch_global_setting", "changes the judge's default device"),
    "torch.set_float32_matmul_precision": ("torch_global_setting", "lowers the judge's matmul precision"),
    "torch.set_flush_denormal": ("torch_global_setting", "changes the judge's numerics"),
    "torch.use_deterministic_algorithms": ("torch_global_setting", "changes the judge's kernels"),
    "torch.manual_seed": ("torch_global_setting", "reseeds, inside a call, the generator the test block "
                                                  "draws its next inputs from (at module scope it is allowed: "
                                                  "the judge seeds after the import)"),
    "torch.random": ("torch_global_setting", "changes the judge's generator state inside a call"),
    "torch.cuda.manual_seed": ("torch_global_setting", "reseeds the judge's generator inside a call"),
    "torch.cuda.manual_seed_all": ("torch_global_setting", "reseeds the judge's generator inside a call"),
    # Names of the dispatch-mode classes wherever they are imported from.
    "TorchDispatchMode": ("torch_internals", "records or rewrites every ATen call"),
    "TorchFunctionMode": ("torch_internals", "rewrites every torch function call"),
    # The allowed standard-library modules' harmful members.
    "logging.FileHandler": ("file_access", "writes log files"),
    "logging.handlers": ("network", "log handlers write files and sockets and run threads"),
    "logging.config": ("network", "reads configuration files and listens on a socket"),
    "logging.currentframe": ("introspection", "returns the caller's frame (and its globals)"),
    "functools.lru_cache": ("memoization", "caches results across calls"),
    "functools.cache": ("memoization", "caches results across calls"),
    "functools.cached_property": ("memoization", "caches results across calls"),
    "operator.attrgetter": ("dynamic_attribute", "reaches attributes by computed names"),
    "operator.methodcaller": ("dynamic_attribute", "calls methods by computed names"),
    "typing.get_type_hints": ("dynamic_code", "evaluates annotation strings as code"),
    "typing.ForwardRef": ("dynamic_code", "evaluates annotation strings as code"),
    "typing.get_overloads": ("introspection", "reads the registry of other modules' functions"),
    "dataclasses.make_dataclass": ("dynamic_code", "builds classes from computed names"),
    "numpy.load": ("file_access", "reads files"),
    "numpy.save": ("file_access", "writes files"),
    "numpy.savez": ("file_access", "writes files"),
    "numpy.savez_compressed": ("file_access", "writes files"),
    "numpy.savetxt": ("file_access", "writes files"),
    "numpy.loadtxt": ("file_access", "reads files"),
    "numpy.genfromtxt": ("file_access", "reads files"),
    "numpy.fromfile": ("file_access", "reads files"),
    "numpy.memmap": ("file_access", "maps files"),
    "numpy.ctypeslib": ("native_code", "calls native code"),
    "numpy.f2py": ("native_code", "compiles native code"),
    "numpy.lib": ("file_access", "numpy's file formats and internals"),
    "numpy.from_dlpack": ("torch_internals", "shares a tensor's memory with numpy past the recorded API"),
    "numpy.frombuffer": ("host_compute", "reads raw memory into numpy"),
}

# Exceptions to FORBIDDEN_PATHS prefixes and to the private-API rule: what TritonBench's own gold
# code uses and reaches nothing the judge depends on (each is exact or a prefix).
ALLOWED_PATHS = {
    # Tuple helpers of torch.nn (pure Python on ints).
    "torch.nn.modules.utils._pair", "torch.nn.modules.utils._single", "torch.nn.modules.utils._triple",
    "torch.nn.modules.utils._quadruple", "torch.nn.modules.utils._ntuple",
    # The current device as a context manager and the current stream's handle (the stream the
    # judge set: a launch on it is timed).
    "torch.cuda._DeviceGuard", "torch._C._cuda_getCurrentRawStream",
    # Inductor-generated Triton code: an allocation, a view, and @triton.jit helpers.
    "torch._C._dynamo.guards._empty_strided_cuda", "torch.ops.inductor._reinterpret_tensor",
    "torch._inductor.runtime.triton_helpers",
    # torch.distributed without a process group (none can be created: init_process_group and
    # the stores are refused and the host has no network): queries and collectives raise or
    # are the identity.
    "torch.distributed.get_world_size", "torch.distributed.get_rank", "torch.distributed.is_initialized",
    "torch.distributed.is_available", "torch.distributed.all_reduce", "torch.distributed.all_gather",
    "torch.distributed.all_gather_into_tensor", "torch.distributed.reduce_scatter_tensor",
    "torch.distributed.broadcast", "torch.distributed.ReduceOp", "torch.distributed.ProcessGroup",
}

# The torch and numpy modules a kernel may reach (an allow-list, issue 38 §2.6): torch itself
# (tensor creation, views, dtypes, devices: its functions and classes, less FORBIDDEN_PATHS),
# torch.nn and its submodules, the math namespaces, autograd's Function, the CUDA device
# queries and autocast, the settings of MODULE_SCOPE_SETTINGS, torch.testing's comparisons and
# torch.distributed's process-group-free subset (ALLOWED_PATHS); numpy for host constants.
# Every other module (torch.utils with its benchmark Timer that compiles a string, torch.package,
# torch.profiler and autograd.profiler with their trace export, torch.onnx, torch.ao, the
# private ones, ...) is refused as module_not_allowed wherever a chain passes through it.
TORCH_MODULES = {"torch", "torch.nn", "torch.autograd", "torch.autograd.function", "torch.autograd.grad_mode",
                 "torch.cuda", "torch.cuda.amp", "torch.amp", "torch.amp.autocast_mode", "torch.backends",
                 "torch.backends.cuda", "torch.backends.cudnn", "torch.linalg", "torch.fft", "torch.special",
                 "torch.testing", "torch.version", "torch.types", "torch.functional", "torch.return_types",
                 "torch.distributed", "torch.sparse"}
TORCH_MODULE_TREES = ("torch.nn.",)
# The same refusal by literal name, for a scan where torch cannot be imported (resolution off).
TORCH_LITERAL_REFUSED = {"torch.utils", "torch.package", "torch.profiler", "torch.autograd.profiler", "torch.onnx",
                         "torch.ao", "torch.quantization", "torch.optim", "torch.distributions", "torch.cuda.jiterator",
                         "torch.cuda.tunable", "torch.backends.xeon", "torch.monitor", "torch.serialization"}
NUMPY_MODULES = {"numpy", "numpy.random", "numpy.linalg", "numpy.fft", "numpy.dtypes", "numpy.exceptions"}

# triton: the public API a kernel uses (first attribute after `triton.`), and deeper public
# helpers TritonBench's gold code uses. Anything else under triton (runtime, compiler, backends,
# knobs) reaches the driver, the compiler cache or process-wide settings.
TRITON_PUBLIC = {"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language",
                 "constexpr", "must_use_result", "OutOfResources", "reinterpret", "ops", "TensorWrapper",
                 "KernelInterface", "JITFunction", "CompilationError", "__version__", "testing"}
TRITON_PUBLIC_PATHS = ("triton.runtime.driver.active.get_current_target",
                       "triton.runtime.driver.active.get_current_device",
                       "triton.runtime.driver.active.get_active_torch_device",
                       "triton.runtime.driver.active.utils.get_device_properties",
                       "triton.runtime.Autotuner", "triton.runtime.autotuner.Autotuner",
                       "triton.runtime.Heuristics", "triton.runtime.JITFunction", "triton.runtime.jit.JITFunction",
                       "triton.runtime.Config", "triton.runtime.autotuner.Config",
                       "triton.runtime.OutOfResources", "triton.runtime.errors.OutOfResources",
                       "triton.runtime.KernelInterface", "triton.runtime.jit.KernelInterface")
# triton.testing: do_bench and friends time with CUDA events on the current stream (harmless);
# its process/file helpers are refused.
TRITON_TESTING_FORBIDDEN = {"perf_report", "Benchmark", "Mark", "get_dram_gbps", "get_max_tensorcore_tflops",
                            "get_max_simd_tflops", "nvsmi", "set_gpu_clock", "cuda_memcheck"}

# torch.backends settings a module may write at module scope: they change this process's own
# torch numerics only (the reference runs in the judge's process; results are compared there).
MODULE_SCOPE_SETTINGS = ("torch.backends.cudnn.allow_tf32", "torch.backends.cuda.matmul.allow_tf32",
                         "torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic",
                         "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
                         "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction")
# Calls allowed at module scope only (the judge seeds its generator after the import).
MODULE_SCOPE_CALLS = {"torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed",
                      "torch.cuda.manual_seed_all"}

# Dunder attributes a kernel may touch: none reach the judge.
ALLOWED_DUNDERS = {"__init__", "__name__", "__len__", "__getitem__", "__version__"}

# Methods that change the object they are called on (containers, and torch's in-place ops
# ending in "_"): called on a name that outlives the call, they keep state across calls.
MUTATING_METHODS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
                    "setdefault", "add", "discard", "__setitem__", "sort", "reverse"}

MEMO_DECORATORS = {"lru_cache", "cache", "cached_property"}

# Calls whose result is a host constant whatever their arguments (sizes, strides, dtypes).
SIZE_METHODS = {"size", "stride", "numel", "dim", "element_size", "nelement", "ndimension", "storage_offset",
                "is_contiguous", "get_device"}
SIZE_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda", "itemsize", "T_", "requires_grad"}
HOST_CONST_BUILTINS = {"len", "int", "float", "bool", "range", "tuple", "list", "min", "max", "abs", "sum",
                       "round", "str", "divmod", "pow", "sorted", "reversed", "zip", "enumerate"}


# --- Resolution against the installed packages --------------------------------------------
class Resolver:
    """Walks attribute chains through the real modules (imported here, in the scan's own
    process; never the candidate). Only modules and classes are descended into: a module by
    getattr (a lazy submodule is imported), a class by inspect.getattr_static (no property or
    descriptor runs); any other object ends the walk."""

    def __init__(self):
        self.roots = {}

    def root(self, name):
        if name not in RESOLVED_ROOTS:
            return None
        if name not in self.roots:
            try:
                self.roots[name] = importlib.import_module(name)
            except Exception:  # not installed here: judged by literal names only
                self.roots[name] = None
        return self.roots[name]

    def walk(self, parts):
        """For the chain parts[0].parts[1]...: (steps, missing) where steps holds, for each
        resolved prefix, (index, object) and missing is the index of the first attribute the
        installed package does not have (None if all exist or the walk stopped early), or
        (None, None) when the root cannot be resolved."""
        obj = self.root(parts[0])
        if obj is None:
            return None, None
        steps = [(0, obj)]
        for i in range(1, len(parts)):
            name = parts[i]
            try:
                if isinstance(obj, types.ModuleType):
                    obj = getattr(obj, name)
                elif inspect.isclass(obj):
                    obj = inspect.getattr_static(obj, name)
                else:
                    break
            except AttributeError:
                if not isinstance(obj, types.ModuleType):
                    break
                try:  # a submodule not imported yet
                    obj = importlib.import_module(obj.__name__ + "." + name)
                except Exception:
                    return steps, i
            except Exception:
                break
            steps.append((i, obj))
        return steps, None

    def status(self):
        ok = [r for r in ("torch", "triton") if self.root(r) is not None]
        return "resolved against " + ", ".join(
            "%s %s" % (r, getattr(self.roots[r], "__version__", "?")) for r in ok) if ok else "literal names only"


RESOLVER = Resolver()


def resolution_status():
    return RESOLVER.status()


def _path_rule(path, module_scope=False):
    """(rule, what, why) for a canonical dotted path, or None when it is allowed."""
    parts = path.split(".")
    for allowed in ALLOWED_PATHS:
        if path == allowed or path.startswith(allowed + "."):
            return None
    if module_scope and path in MODULE_SCOPE_CALLS:
        return None
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in FORBIDDEN_PATHS:
            rule, why = FORBIDDEN_PATHS[prefix]
            return rule, prefix, why
    if parts[-1] in ("TorchDispatchMode", "TorchFunctionMode"):
        rule, why = FORBIDDEN_PATHS[parts[-1]]
        return rule, path, why
    if parts[0] in FORBIDDEN_MODULES:
        rule, why = FORBIDDEN_MODULES[parts[0]]
        return rule, path, why
    for i in range(2, len(parts) + 1):  # where torch cannot be imported: its refused modules by name
        if ".".join(parts[:i]) in TORCH_LITERAL_REFUSED:
            return ("module_not_allowed", ".".join(parts[:i]),
                    "not among the torch modules a kernel may use (an allow-list: %s)" % ", ".join(sorted(TORCH_MODULES)))
    if parts[0] == "torch" and any(p.endswith("Storage") for p in parts[1:]):
        return ("host_compute", path, "a storage class reads raw memory past the recorded API (and from_file "
                                      "reads files)")
    if parts[0] == "torch" and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                   for p in parts[1:]):
        return ("torch_internals", path,
                "private PyTorch API (torch._C and the like) reaches dispatch and its recording")
    if parts[0] == "triton" and len(parts) > 1:
        if any(path == p or path.startswith(p + ".") for p in TRITON_PUBLIC_PATHS):
            return None
        if parts[1] not in TRITON_PUBLIC or (parts[1] == "testing" and len(parts) > 2 and
                                              parts[2] in TRITON_TESTING_FORBIDDEN):
            return ("triton_internals", path,
                    "Triton's runtime, compiler, driver and settings are not part of writing a kernel")
    if parts[0] in RESOLVED_ROOTS and parts[0] not in ("torch", "triton") and \
            any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
        return ("private_api", path, "a module's private members reach its internals")
    return None


def _module_rule(name):
    """(rule, why) for reaching the module named `name`, or None when a kernel may use it."""
    top = name.split(".")[0]
    if name in FORBIDDEN_MODULES or top in FORBIDDEN_MODULES:
        return FORBIDDEN_MODULES.get(name, FORBIDDEN_MODULES.get(top))
    if top in ("torch", "numpy"):
        allowed, trees = (TORCH_MODULES, TORCH_MODULE_TREES) if top == "torch" else (NUMPY_MODULES, ())
        if name in allowed or name.startswith(trees) or \
                any(p == name or p.startswith(name + ".") for p in ALLOWED_PATHS):
            return None
        return ("module_not_allowed",
                "%s is not among the %s modules a kernel may use (an allow-list: %s)" %
                (name, top, ", ".join(sorted(allowed) + [t + "*" for t in trees])))
    if name in ALLOWED_MODULES or name.startswith(ALLOWED_MODULE_PREFIXES) or top in ("torch", "triton") or \
            name.startswith("collections.") or name.startswith("numpy.") or name.startswith("logging.") or \
            name.startswith("typing") or name.startswith("enum") or name.startswith("dataclasses"):
        return None
    return ("module_not_allowed", "reaches a module a kernel has no use for through an attribute")


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _launches(nodes):
    """True when the statements launch a Triton kernel (`kernel[grid](...)`)."""
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Subscript):
                return True
    return False


class Scanner(ast.NodeVisitor):
    def __init__(self, source, tree):
        self.lines = source.splitlines()
        self.findings = []
        self.seen = set()
        self.aliases = {}  # local name -> dotted module path or object path
        self.module_aliases = set()  # names known to be bound to a module object
        self.module_names = set()  # names bound at module level
        self.module_functions = set()
        self.imported = set()  # local names bound by imports (modules and their members)
        self.scopes = []  # stack of sets of names local to the enclosing functions
        self.loops = []  # stack of (kind, launches) for comprehensions and loops in functions
        self.parent = {}
        for n in ast.walk(tree):
            for c in ast.iter_child_nodes(n):
                self.parent[c] = n
        self.shadowing, self.deleted = self.module_bindings(tree)
        self.refused_imports = set()  # modules whose import is already a finding
        self.host_consts = [set()]  # per function: local names holding host constants

    # -- helpers ------------------------------------------------------------------------------
    def add(self, node, rule, what, why):
        key = (rule, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if key in self.seen:
            return
        self.seen.add(key)
        self.findings.append({"rule": rule, "line": getattr(node, "lineno", 0),
                              "col": getattr(node, "col_offset", 0) + 1, "what": what, "why": why})

    @staticmethod
    def module_bindings(tree):
        """Names that a top-level statement binds unconditionally, with the index of the first
        such statement; a name deleted anywhere is left out (it may be the builtin again)."""
        first, deleted = {}, set()
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Delete):
                for t in sub.targets:
                    if isinstance(t, ast.Name):
                        deleted.add(t.id)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                deleted.update(sub.names)  # a function may rebind it to anything
        for i, stmt in enumerate(tree.body):
            names = []
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [stmt.name]
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                names = [a.asname or a.name.split(".")[0] for a in stmt.names]
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                    targets = []
                for t in targets:
                    names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
            for n in names:
                if n not in deleted:
                    first.setdefault(n, i)
        return first, deleted

    def top_index(self, node):
        while node in self.parent and not isinstance(self.parent[node], ast.Module):
            node = self.parent[node]
        p = self.parent.get(node)
        return p.body.index(node) if isinstance(p, ast.Module) else -1

    def binds(self, node, name):
        """True when `name`, used at `node`, is bound by the module itself (not the builtin)."""
        if self.is_local(name) or name in self.aliases:
            return True
        if not self.scopes and self.bound_before(node, name):
            return True
        i = self.shadowing.get(name)
        if i is None:
            return False
        # Inside a function the module has finished importing; at module scope the binding must
        # come first.
        return bool(self.scopes) or self.top_index(node) > i

    @staticmethod
    def stmt_binds(stmt, name):
        """True when the statement itself (not a branch inside it) binds `name`."""
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return stmt.name == name
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
        if isinstance(stmt, ast.Assign):
            return any(isinstance(n, ast.Name) and n.id == name for t in stmt.targets for n in ast.walk(t))
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            return isinstance(stmt.target, ast.Name) and stmt.target.id == name
        return False

    def bound_before(self, node, name):
        """At module scope: an earlier statement of an enclosing block binds `name` on every path
        to `node` (and nothing deletes it)."""
        if name in self.deleted:
            return False
        child = node
        p = self.parent.get(child)
        while p is not None:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(p, field, None)
                if isinstance(block, list) and child in block:
                    if any(self.stmt_binds(s, name) for s in block[:block.index(child)]):
                        return True
            child, p = p, self.parent.get(p)
        return False

    def chain(self, node):
        """(root Name node, attribute names) of a Name/Attribute chain, or (None, names)."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return (node if isinstance(node, ast.Name) else None), list(reversed(parts))

    def dotted(self, node):
        """The dotted path of a Name/Attribute chain with its root resolved, or None."""
        root, parts = self.chain(node)
        if root is None or (self.is_local(root.id) and root.id not in self.aliases):
            return None
        base = self.aliases.get(root.id, root.id)
        return ".".join([base] + parts)

    def root_name(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def is_local(self, name):
        return any(name in s for s in self.scopes)

    def at_module_scope(self):
        return not self.scopes

    def check_path(self, node, path):
        """Applies the path rules to `path`, resolved against the installed packages; returns
        True when a finding was added; "module" when the path is a module object."""
        if path is None:
            return False
        if any(path == m or path.startswith(m + ".") for m in self.refused_imports):
            return False  # its import is the finding
        parts = path.split(".")
        steps, missing = RESOLVER.walk(parts)
        literal = path if missing is None else ".".join(parts[:missing])
        hit = _path_rule(literal, self.at_module_scope())
        if hit:
            self.add(node, *hit)
            return True
        if not steps:
            return False
        # Every module the chain passes through is that module.
        last_module = None
        for i, obj in steps:
            if isinstance(obj, types.ModuleType):
                name = getattr(obj, "__name__", "") or ""
                rule = _module_rule(name)
                if rule:
                    self.add(node, rule[0], "%s (the module %s)" % (".".join(parts[:i + 1]), name), rule[1])
                    return True
                last_module = (i, name)
        if last_module and last_module[0] > 0:
            i, name = last_module
            end = missing if missing is not None else len(parts)
            canonical = ".".join([name] + parts[i + 1:end])
            hit = _path_rule(canonical, self.at_module_scope())
            if hit:
                self.add(node, hit[0], "%s (%s)" % (".".join(parts[:end]), hit[1]), hit[2])
                return True
        i, obj = steps[-1]
        if i > 0 and (inspect.isfunction(obj) or inspect.isbuiltin(obj) or inspect.isclass(obj)):
            origin = (getattr(obj, "__module__", None) or "").split(".")[0]
            if origin in FORBIDDEN_MODULES:
                rule, why = FORBIDDEN_MODULES[origin]
                self.add(node, rule, "%s (from %s)" % (".".join(parts[:i + 1]), origin), why)
                return True
            if origin == "builtins" and getattr(obj, "__name__", "") in FORBIDDEN_BUILTINS:
                rule, why = FORBIDDEN_BUILTINS[obj.__name__]
                self.add(node, rule, "%s (the builtin %s)" % (".".join(parts[:i + 1]), obj.__name__), why)
                return True
        if missing is None and len(steps) == len(parts) and isinstance(steps[-1][1], types.ModuleType):
            return "module"
        return False

    def check_attribute_name(self, node, attr, shown):
        """Rules on an attribute name whatever the receiver."""
        if _is_dunder(attr) and attr not in ALLOWED_DUNDERS:
            self.add(node, "dunder_access", shown,
                     "reaches objects past their API (__dict__, __class__, __globals__, __subclasses__, __code__)")
        elif attr in MODULE_ATTRIBUTE_NAMES:
            rule, why = FORBIDDEN_MODULES[attr]
            self.add(node, rule, shown + " (a module re-exported as an attribute is that module)", why)
        elif attr in FRAME_ATTRIBUTES:
            self.add(node, "introspection", shown, "reaches a frame and its globals (the caller's: the judge's)")
        elif attr in HOST_DATA_ATTRIBUTES:
            self.add(node, "host_compute", shown, HOST_DATA_ATTRIBUTES[attr])

    # -- host constants (numpy's arguments) ------------------------------------------------
    def host_const(self, e):
        """True when `e` can only hold a host constant (literals, sizes, dtypes, shapes and
        arithmetic on them), never tensor data: what numpy may compute on."""
        if e is None or isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.JoinedStr):
            return True
        if isinstance(e, ast.Name):
            if self.scopes and self.is_local(e.id):
                return e.id in self.host_consts[-1]
            return e.id in self.module_names or e.id in ("None", "True", "False") or e.id in HOST_CONST_BUILTINS
        if isinstance(e, ast.Attribute):
            if e.attr in SIZE_ATTRIBUTES:
                return True
            path = self.dotted(e)
            return bool(path) and path.split(".")[0] in RESOLVED_ROOTS
        if isinstance(e, ast.Call):
            f = e.func
            args = list(e.args) + [k.value for k in e.keywords]
            if isinstance(f, ast.Attribute) and f.attr in SIZE_METHODS:
                return all(self.host_const(a) for a in args)
            path = self.dotted(f) if isinstance(f, (ast.Name, ast.Attribute)) else None
            ok_func = (isinstance(f, ast.Name) and f.id in HOST_CONST_BUILTINS and not self.binds(f, f.id)) or \
                (path and path.split(".")[0] in ("numpy", "math")) or \
                (path in ("torch.finfo", "torch.iinfo", "triton.cdiv", "triton.next_power_of_2"))
            return bool(ok_func) and all(self.host_const(a) for a in args)
        if isinstance(e, ast.Subscript):
            return self.host_const(e.value) and self.host_const(e.slice)
        if isinstance(e, ast.Slice):
            return all(self.host_const(x) for x in (e.lower, e.upper, e.step))
        if isinstance(e, ast.Starred):
            return self.host_const(e.value)
        if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple, ast.List,
                          ast.Set, ast.Dict)):
            return all(self.host_const(c) for c in ast.iter_child_nodes(e)
                       if not isinstance(c, (ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context)))
        return False

    def function_host_consts(self, node):
        """The function's locals that only ever hold host constants (to a fixed point)."""
        assigns = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign):
                assigns += [(t, sub.value) for t in sub.targets]
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)) and sub.value is not None:
                assigns.append((sub.target, sub.value))
            elif isinstance(sub, (ast.For, ast.comprehension)):
                assigns.append((sub.target, sub.iter))
        names = {n.id for t, _ in assigns for n in ast.walk(t) if isinstance(n, ast.Name)}
        consts = set(names)
        self.host_consts.append(consts)
        changed = True
        while changed:
            changed = False
            for t, v in assigns:
                if not self.host_const(v):
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id in consts:
                            consts.discard(n.id)
                            changed = True
        self.host_consts.pop()
        return consts

    # -- imports ------------------------------------------------------------------------------
    def check_module(self, node, module, members_follow=False):
        top = module.split(".")[0]
        if module in FORBIDDEN_MODULES or top in FORBIDDEN_MODULES:
            rule, why = FORBIDDEN_MODULES.get(module, FORBIDDEN_MODULES.get(top))
            self.add(node, rule, "import " + module, why)
            return False
        if top in RESOLVED_ROOTS or module in ALLOWED_MODULES or module.startswith(ALLOWED_MODULE_PREFIXES):
            if members_follow:
                return True  # `from M import N`: each M.N is judged as an attribute access
            # A submodule import is judged by the same path rules as an attribute access.
            before = len(self.findings)
            self.check_path(node, module)
            return len(self.findings) == before
        self.add(node, "import_not_allowed", "import " + module,
                 "not a module a kernel needs (allowed: triton, torch, math, typing, numpy on constants, "
                 "logging, warnings, time, contextlib, functools, dataclasses, enum, collections, itertools, "
                 "operator, copy, abc)")
        return False

    def visit_Import(self, node):
        for a in node.names:
            if not self.check_module(node, a.name):
                self.refused_imports.add(a.name)
            local = a.asname or a.name.split(".")[0]
            self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
            self.module_aliases.add(local)
            self.bind(local, imported=True)

    def visit_ImportFrom(self, node):
        if node.level:
            self.add(node, "import_not_allowed", "relative import", "a candidate is one module")
            return
        module = node.module or ""
        if not self.check_module(node, module, members_follow=True):
            self.refused_imports.add(module)
        for a in node.names:
            if a.name == "*":
                self.add(node, "import_not_allowed", "from %s import *" % module,
                         "a star import hides which names the module uses")
                continue
            full = module + "." + a.name
            is_module = self.check_path(node, full)
            self.check_attribute_name(node, a.name, "from %s import %s" % (module, a.name))
            local = a.asname or a.name
            self.aliases[local] = full
            if is_module == "module":
                self.module_aliases.add(local)
            self.bind(local, imported=True)

    def bind(self, name, imported=False):
        if self.scopes:
            self.scopes[-1].add(name)
        else:
            self.module_names.add(name)
            if imported:
                self.imported.add(name)

    # -- names, attributes, calls -----------------------------------------------------------
    def used_as_value(self, node):
        """True when the Name/Attribute `node` is used other than as the base of an attribute
        access (and is not the callee of a call)."""
        p = self.parent.get(node)
        if isinstance(p, ast.Attribute) and p.value is node:
            return False
        if isinstance(p, ast.Call) and p.func is node:
            return False
        return True

    def module_alias_assignment(self, node):
        """`NAME = <module chain>` at module scope: an alias, like an import."""
        p = self.parent.get(node)
        return (isinstance(p, ast.Assign) and p.value is node and len(p.targets) == 1 and
                isinstance(p.targets[0], ast.Name) and isinstance(self.parent.get(p), ast.Module))

    def visit_Name(self, node):
        name = node.id
        if name in FORBIDDEN_BUILTINS and isinstance(node.ctx, ast.Load) and not self.binds(node, name):
            rule, why = FORBIDDEN_BUILTINS[name]
            self.add(node, rule, name, why)
        elif _is_dunder(name) and name not in ALLOWED_DUNDERS:
            self.add(node, "dunder_access", name, "reaches interpreter internals (builtins, loader, spec)")
        elif name in ("getattr", "setattr", "delattr") and not self.binds(node, name) and \
                self.used_as_value(node):
            self.add(node, "dynamic_attribute", name + " as a value", "reaches attributes by computed names")
        elif name in self.aliases:
            self.check_path(node, self.aliases[name])
            if isinstance(node.ctx, ast.Load) and name in self.module_aliases and self.used_as_value(node) \
                    and not self.module_alias_assignment(node):
                self.add(node, "module_as_value", name,
                         "a module used as a value escapes the checks on its attributes")

    def storage_size(self, node):
        """`t.untyped_storage().size()` and the like: a size, not data."""
        call = self.parent.get(node)
        outer = self.parent.get(call)
        return isinstance(call, ast.Call) and call.func is node and isinstance(outer, ast.Attribute) and \
            outer.attr in ("size", "nbytes", "data_ptr", "element_size") and \
            isinstance(self.parent.get(outer), ast.Call)

    def visit_Attribute(self, node):
        # Reached only for the outermost attribute of a chain: the inner ones are checked here.
        nodes, base = [], node
        while isinstance(base, ast.Attribute):
            nodes.append(base)
            base = base.value
        for a in nodes:
            if a.attr in ("untyped_storage", "storage") and self.storage_size(a):
                continue
            self.check_attribute_name(a, a.attr, "." + a.attr)
        path = self.dotted(node)
        res = self.check_path(node, path)
        if res == "module" and isinstance(node.ctx, ast.Load) and self.used_as_value(node):
            p = self.parent.get(node)
            if self.module_alias_assignment(node) and self.at_module_scope():
                target = p.targets[0].id
                self.aliases[target] = path
                self.module_aliases.add(target)
            else:
                self.add(node, "module_as_value", path,
                         "a module used as a value escapes the checks on its attributes")
        self.visit(base)

    def visit_Call(self, node):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else None
        if name in ("getattr", "setattr", "delattr", "hasattr") and not self.binds(f, name):
            attr = node.args[1] if len(node.args) > 1 else None
            if name in ("setattr", "delattr"):
                self.add(node, "attribute_write", name + "()", "changes objects by name (monkeypatching)")
            elif not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                self.add(node, "dynamic_attribute", name + "() with a computed name",
                         "reaches attributes the scan cannot see")
            else:
                val = attr.value
                self.check_attribute_name(node, val, "%s(..., %r)" % (name, val))
                target = self.dotted(node.args[0]) if node.args else None
                if target:
                    self.check_path(node, target + "." + val)
        if isinstance(f, ast.Attribute) and self.scopes:
            root = self.root_name(f.value)
            if root and not self.is_local(root) and root not in self.imported and \
                    (f.attr in MUTATING_METHODS or (f.attr.endswith("_") and not f.attr.startswith("_"))):
                self.add(node, "nonlocal_state_mutation", "%s.%s()" % (root, f.attr),
                         "changes state that outlives the call (a cache keyed by data_ptr or call count)")
        if isinstance(f, ast.Attribute) and f.attr == "item" and not node.args and self.loops:
            kind, launches = self.loops[-1]
            if kind == "comprehension" or not launches:
                self.add(node, "host_compute", ".item() in a %s" % ("comprehension" if kind == "comprehension"
                                                                   else "loop that launches no kernel"),
                         "reads tensor elements one by one into Python, where arithmetic on them is compute the "
                         "judge's recorder cannot see (.item() for a scalar launch parameter, outside such loops, "
                         "is allowed)")
        path = self.dotted(f) if isinstance(f, (ast.Name, ast.Attribute)) else None
        if path and path.split(".")[0] == "numpy":
            args = list(node.args) + [k.value for k in node.keywords]
            if not all(self.host_const(a) for a in args):
                self.add(node, "host_compute", path + "(...) on a value that may hold tensor data",
                         "numpy on tensor data (through __array__) is compute the judge's recorder cannot see; "
                         "numpy may only compute on host constants (sizes, dtypes, literals)")
        if path == "logging.basicConfig" and any(k.arg in ("filename", "stream", "handlers") for k in node.keywords):
            self.add(node, "file_access", "logging.basicConfig(filename/stream/handlers=...)",
                     "sends log records to files or streams of the candidate's choosing")
        self.generic_visit(node)

    # -- loops: .item() per element ---------------------------------------------------------
    def loop(self, node, kind, body):
        if not self.scopes:
            self.generic_visit(node)
            return
        self.loops.append((kind, kind != "comprehension" and _launches(body)))
        self.generic_visit(node)
        self.loops.pop()

    def visit_For(self, node):
        self.loop(node, "loop", node.body)

    def visit_AsyncFor(self, node):
        self.loop(node, "loop", node.body)

    def visit_While(self, node):
        self.loop(node, "loop", node.body)

    def visit_ListComp(self, node):
        self.loop(node, "comprehension", [])

    visit_SetComp = visit_ListComp
    visit_DictComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    # -- writes ----------------------------------------------------------------------------------
    def check_target(self, node, target):
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.check_target(node, t)
            return
        if isinstance(target, ast.Starred):
            self.check_target(node, target.value)
            return
        if isinstance(target, ast.Name):
            self.bind(target.id)
            return
        root = self.root_name(target)
        if root is None:
            return
        if isinstance(target, ast.Attribute) and (root in self.imported or root in self.aliases):
            path = self.dotted(target)
            if self.at_module_scope() and path in MODULE_SCOPE_SETTINGS:
                return
            self.add(node, "module_attribute_write", "%s = ..." % path,
                     "monkeypatches a module the judge also uses (torch, triton, math, time)")
        elif root in self.module_functions:
            self.add(node, "function_attribute", "%s.%s" % (root, "..."),
                     "keeps state on a function object across calls")
        elif self.scopes and not self.is_local(root) and not self.judge_setter(node):
            self.add(node, "nonlocal_state_mutation", "%s[...] / %s.attr = ..." % (root, root),
                     "changes state that outlives the call (a cache keyed by data_ptr or call count)")

    def judge_setter(self, stmt):
        """`Cls.flag = param` in a top-level function or method that the module's own code never
        names (only the judge's test block may call it): the value is the test block's, not the
        candidate's, so the state it keeps is the judge's own setting."""
        fn = self.current_function
        if fn is None or len(self.scopes) > 1 or not isinstance(stmt, ast.Assign) or \
                not isinstance(stmt.value, ast.Name):
            return False
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        if stmt.value.id not in params or any(isinstance(n, ast.Name) and n.id == stmt.value.id and
                                              isinstance(n.ctx, ast.Store) for n in ast.walk(fn)):
            return False
        return self.references.get(fn.name, 0) == 0

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.check_target(node, t)
            if not isinstance(t, ast.Name):
                self.visit(t)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            if self.scopes and not self.is_local(node.target.id) and \
                    not self.allowed_global_write(node.target.id, node):
                self.add(node, "nonlocal_state_mutation", node.target.id + " op= ...",
                         "changes state that outlives the call")
        else:
            self.check_target(node, node.target)
            self.visit(node.target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.check_target(node, node.target)

    def visit_Delete(self, node):
        for t in node.targets:
            if not isinstance(t, ast.Name):
                self.check_target(node, t)
            self.visit(t)

    # -- global: a constant config, judged by use ----------------------------------------------
    @staticmethod
    def literal_expr(e, name):
        """A value built from literals only; `name` itself may appear only as NAME op literal
        (a block size halved on OutOfResources)."""
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.UnaryOp):
            return Scanner.literal_expr(e.operand, name)
        if isinstance(e, ast.BinOp):
            if isinstance(e.left, ast.Name) and e.left.id == name:
                return isinstance(e.right, ast.Constant) and isinstance(e.op, (ast.FloorDiv, ast.RShift))
            return Scanner.literal_expr(e.left, name) and Scanner.literal_expr(e.right, name)
        if isinstance(e, ast.IfExp):  # the test may read anything; both values are literals
            return Scanner.literal_expr(e.body, name) and Scanner.literal_expr(e.orelse, name)
        if isinstance(e, ast.Tuple):
            return all(Scanner.literal_expr(x, name) for x in e.elts)
        return False

    def allowed_global_write(self, name, stmt):
        """Writes to a `global` name are allowed when it is a constant config: every value written
        is a literal expression (or the name floor-divided by a literal, only in an `except`
        handler: a block size halved on OutOfResources), and no function tests it in a condition.
        Such a global holds one of a few fixed values chosen by the code, never data or results."""
        fn = self.current_function
        if fn is None or name not in self.global_decls.get(fn, ()):
            return False
        if name in self.tested_globals:
            return False
        if isinstance(stmt, ast.AugAssign):
            ok = isinstance(stmt.op, (ast.FloorDiv, ast.RShift)) and isinstance(stmt.value, ast.Constant)
            halving = True
        elif isinstance(stmt, ast.Assign):
            ok = self.literal_expr(stmt.value, name)
            halving = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value))
        else:
            return False
        if ok and halving:
            p = self.parent.get(stmt)
            while p is not None and not isinstance(p, ast.ExceptHandler) and p is not fn:
                p = self.parent.get(p)
            ok = isinstance(p, ast.ExceptHandler)
        return ok

    def visit_Global(self, node):
        fn = self.current_function
        for name in node.names:
            writes = [s for s in ast.walk(fn) if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and
                      any(isinstance(t, ast.Name) and t.id == name
                          for tt in (s.targets if isinstance(s, ast.Assign) else [s.target]) for t in ast.walk(tt))] \
                if fn is not None else []
            others = [s for s in ast.walk(fn) if isinstance(s, (ast.For, ast.With, ast.NamedExpr, ast.Delete,
                                                                 ast.FunctionDef, ast.ClassDef, ast.Import,
                                                                 ast.ImportFrom))] if fn is not None else []
            binds_otherwise = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
                                  for s in others for n in ast.walk(s)
                                  if not isinstance(s, (ast.FunctionDef, ast.ClassDef))) or \
                any(getattr(s, "name", None) == name for s in others) or \
                any((a.asname or a.name.split(".")[0]) == name for s in others
                    if isinstance(s, (ast.Import, ast.ImportFrom)) for a in s.names)
            if binds_otherwise or not all(self.allowed_global_write(name, w) for w in writes):
                self.add(node, "global_state", "global " + name,
                         "module state written from a function outlives the call (caches, counters); only a "
                         "constant config (literal values, never tested in a condition) may be global")

    def visit_Nonlocal(self, node):
        self.add(node, "global_state", "nonlocal " + ", ".join(node.names),
                 "closure state written from a function outlives the call (caches, counters)")

    # -- definitions ---------------------------------------------------------------------------
    def function(self, node):
        for d in node.decorator_list:
            base = d.func if isinstance(d, ast.Call) else d
            path = self.dotted(base) or ""
            if path.split(".")[-1] in MEMO_DECORATORS:
                self.add(d, "memoization", "@" + path, "returns results cached from earlier calls")
            self.visit(d)
        a = node.args
        for default in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
            if isinstance(default, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or (
                    isinstance(default, ast.Call) and isinstance(default.func, ast.Name) and
                    default.func.id in ("dict", "list", "set", "bytearray")):
                self.add(default, "nonlocal_state_mutation", "mutable default argument",
                         "a mutable default keeps state across calls")
            self.visit(default)
        for arg in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else []) + \
                ([a.kwarg] if a.kwarg else []):
            if arg.annotation is not None:
                self.visit(arg.annotation)
        if node.returns is not None:
            self.visit(node.returns)
        if not self.scopes:
            self.module_functions.add(node.name)
        self.bind(node.name)
        local = set()
        for arg in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else []) + \
                ([a.kwarg] if a.kwarg else []):
            local.add(arg.arg)
        # Names assigned anywhere in this function's own body are local (Python's rule).
        globals_here = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
                local.add(sub.name)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                for al in sub.names:
                    local.add(al.asname or al.name.split(".")[0])
            elif isinstance(sub, ast.arg):
                local.add(sub.arg)
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Global, ast.Nonlocal)):
                local.difference_update(sub.names)
                if isinstance(sub, ast.Global):
                    globals_here.update(sub.names)
        self.global_decls[node] = globals_here
        outer_fn, outer_loops = self.current_function, self.loops
        self.current_function, self.loops = node, []
        self.scopes.append(local)
        self.host_consts.append(self.function_host_consts(node))
        for stmt in node.body:
            self.visit(stmt)
        self.host_consts.pop()
        self.scopes.pop()
        self.current_function, self.loops = outer_fn, outer_loops

    def visit_FunctionDef(self, node):
        self.function(node)

    def visit_AsyncFunctionDef(self, node):
        self.function(node)

    def visit_Lambda(self, node):
        a = node.args
        for default in list(a.defaults) + [d for d in a.kw_defaults if d is not None]:
            self.visit(default)
        names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
        names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        self.scopes.append(names)
        self.visit(node.body)
        self.scopes.pop()

    def visit_ClassDef(self, node):
        for b in node.bases:
            path = self.dotted(b) or ""
            if path in ("torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase", "torch.nn.Parameter"):
                self.add(b, "tensor_subclass", "class %s(%s)" % (node.name, path),
                         "a tensor subclass can answer the judge's comparisons itself")
        self.bind(node.name)
        self.generic_visit(node)


def _tested_globals(tree):
    """Names declared `global` somewhere that some condition reads (if/while/assert tests,
    conditional expressions, boolean operators, comparisons)."""
    declared = {n for s in ast.walk(tree) if isinstance(s, ast.Global) for n in s.names}
    tested = set()
    for s in ast.walk(tree):
        tests = []
        if isinstance(s, (ast.If, ast.While, ast.IfExp)):
            tests = [s.test]
        elif isinstance(s, ast.Assert):
            tests = [s.test]
        elif isinstance(s, (ast.BoolOp, ast.Compare)):
            tests = [s]
        elif isinstance(s, ast.comprehension):
            tests = list(s.ifs)
        for t in tests:
            tested |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name) and n.id in declared}
    return tested


def scan_source(source, filename="kernel.py"):
    out = {"version": 1, "syntax_error": None, "findings": []}
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:  # IndentationError and TabError are SyntaxErrors
        out["syntax_error"] = {"type": type(e).__name__, "message": e.msg, "line": e.lineno or 0,
                               "offset": e.offset or 0, "text": (e.text or "").rstrip("\n")}
        return out
    except ValueError as e:  # null bytes
        out["syntax_error"] = {"type": "SyntaxError", "message": str(e), "line": 0, "offset": 0, "text": ""}
        return out
    s = Scanner(source, tree)
    s.current_function = None
    s.global_decls = {}
    s.tested_globals = _tested_globals(tree)
    s.references = {}
    for n in ast.walk(tree):
        name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else \
            n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None
        if name is not None:
            s.references[name] = s.references.get(name, 0) + 1
    s.visit(tree)
    out["findings"] = sorted(s.findings, key=lambda f: (f["line"], f["col"], f["rule"]))
    out["resolution"] = RESOLVER.status()
    return out


def scan_file(path):
    """(the scan's JSON line, None) or (None, why the file could not be read)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        source = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return None, "%s: %s" % (path, e)
    return json.dumps(scan_source(source, path)) + "\n", None


def serve(cpu_seconds):
    """The warm scanner (`--serve`, triton_scan.cpp's pool): torch and Triton are imported once,
    here, and never scanned with; for each path read from stdin a child forked from this state
    scans the file exactly as `ast_scan.py PATH` would (the same modules imported, nothing left
    from an earlier scan: every scan starts from the same fork), under RLIMIT_CPU of
    `cpu_seconds`, and writes its JSON line to a pipe. The server prints that line, or
    {"error": why} when the child ended without one (a read error, a crash, the CPU limit)."""
    import resource
    RESOLVER.root("torch")
    RESOLVER.root("triton")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        path = line.rstrip("\n")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the scan: its own CPU limit, its own result
            os.close(r)
            code = 3
            try:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
                out, err = scan_file(path)
                data = (out if out is not None else json.dumps({"error": err}) + "\n").encode()
                while data:
                    data = data[os.write(w, data):]
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        while True:
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        reply = b"".join(chunks).decode("utf-8", "replace")
        if not reply.endswith("\n") or "\n" in reply[:-1]:
            reply = json.dumps({"error": "the scan of %s ended (wait status %d) without its result"
                                % (path, status)}) + "\n"
        sys.stdout.write(reply)
        sys.stdout.flush()
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--serve":
        return serve(int(argv[2]))
    if len(argv) != 2:
        sys.stderr.write("usage: python3 -I ast_scan.py KERNEL.py | --serve CPU_SECONDS\n")
        return 2
    out, err = scan_file(argv[1])
    if out is None:
        sys.stderr.write("ast_scan: %s\n" % err)
        return 2
    sys.stdout.flush()
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
