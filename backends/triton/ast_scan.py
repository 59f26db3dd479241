#!/usr/bin/env python3
"""kforge's static scan of a Triton candidate module, run before the module is imported.

Usage: python3 -I ast_scan.py KERNEL.py   (standard library only; never imports the candidate)

Prints one JSON object on stdout:
  {"version": 1, "syntax_error": null | {"type", "message", "line", "offset", "text"},
   "findings": [{"rule", "line", "col", "what", "why"}, ...]}
and exits 0 whenever the file could be read and parsed or its syntax error reported; 2 on a
usage or read error (message on stderr).

A Triton candidate is a module whose kf_forward(*inputs) allocates outputs with torch and
launches @triton.jit kernels. Everything else a module can do is either harmless or a way to
escape the judge: to reach the process, the file system or the network; to switch off or fool
the runtime's recording of PyTorch compute; or to return an answer kept from an earlier call.
The runtime checks (dispatch recording, fresh inputs per trial, output aliasing) decide what
only running can tell; this scan rejects what reading can tell, so the candidate never gets
the chance. Each rule below names why a kernel has no use for the construct.

Resolution: import aliases are followed (`import triton.language as tl`, `from torch.cuda import
Stream as S`), so a rule on `torch.cuda.Stream` catches `S()` too. The scan does not evaluate
code: a name built at run time (getattr with a computed string, __import__, exec) is itself a
finding, which is what keeps the resolution sound.
"""

import ast
import json
import sys

# --- What a kernel module may import ------------------------------------------------------
# triton (jit, autotune, heuristics, Config, cdiv, next_power_of_2) and triton.language with its
# submodules (tl.math, tl.extra.libdevice) write the kernel; torch allocates outputs and views;
# math and typing serve constants and annotations; __future__ only changes parsing. Nothing else
# is needed to write a kernel, and each further module is an avenue the rules would have to
# follow: functools (memoisation), dataclasses (not needed; kept out to keep the list minimal),
# numpy (host compute, not Triton), os/sys/io/... (see FORBIDDEN_MODULES for the named reasons).
ALLOWED_MODULES = {"triton", "triton.language", "torch", "math", "typing", "__future__"}
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
# torch's and triton's submodules are judged by FORBIDDEN_PATHS and TRITON_PUBLIC, as attribute
# accesses are (`import torch` reaches them all anyway). Compute through torch (torch.nn.functional
# included) is not the scan's concern: the runtime records every ATen op kf_forward runs.

# Modules refused with a named rule (the rest of the standard library and third-party modules
# are refused by "import_not_allowed").
FORBIDDEN_MODULES = {
    "subprocess": ("process", "starts processes"),
    "multiprocessing": ("process", "starts processes"),
    "pty": ("process", "starts processes"),
    "os": ("os_access", "reaches the process, its environment and the file system"),
    "posix": ("os_access", "reaches the process, its environment and the file system"),
    "sys": ("os_access", "reaches sys.modules, the interpreter and its streams"),
    "shutil": ("file_access", "reads and writes files"),
    "pathlib": ("file_access", "reads and writes files"),
    "tempfile": ("file_access", "writes files"),
    "io": ("file_access", "opens files"),
    "glob": ("file_access", "lists files"),
    "mmap": ("file_access", "maps files and memory"),
    "socket": ("network", "opens network connections"),
    "ssl": ("network", "opens network connections"),
    "http": ("network", "opens network connections"),
    "urllib": ("network", "opens network connections"),
    "requests": ("network", "opens network connections"),
    "ctypes": ("native_code", "calls native code and reads raw memory"),
    "cffi": ("native_code", "calls native code"),
    "importlib": ("dynamic_import", "imports modules by computed names"),
    "builtins": ("dynamic_import", "reaches __import__, exec and open under other names"),
    "runpy": ("dynamic_import", "runs other modules"),
    "gc": ("introspection", "finds the judge's live objects (tensors, references)"),
    "inspect": ("introspection", "reads frames, callers and their locals"),
    "traceback": ("introspection", "reads frames"),
    "threading": ("concurrency", "runs work outside the timed call"),
    "_thread": ("concurrency", "runs work outside the timed call"),
    "concurrent": ("concurrency", "runs work outside the timed call"),
    "asyncio": ("concurrency", "runs work outside the timed call"),
    "signal": ("signal", "changes signal handling (timeouts)"),
    "atexit": ("signal", "runs code at interpreter exit"),
    "pickle": ("serialization", "runs code while loading data"),
    "marshal": ("serialization", "loads code objects"),
    "shelve": ("serialization", "runs code while loading data"),
    "functools": ("memoization", "caches results across calls (lru_cache, cache)"),
    "weakref": ("introspection", "keeps references to the judge's objects"),
    "copyreg": ("serialization", "changes how objects are rebuilt"),
    "code": ("dynamic_code", "runs source text"),
    "codeop": ("dynamic_code", "compiles source text"),
    "types": ("dynamic_code", "builds functions and code objects"),
}

# Builtins with no place in a kernel.
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

# Dotted paths (after alias resolution) and why they are refused; a path is refused when it
# equals one of these or starts with one of them followed by ".".
FORBIDDEN_PATHS = {
    # PyTorch's dispatch machinery: these switch off or fool the recording of compute.
    "torch.ops": ("torch_internals", "calls ATen operators past the recorded Python API"),
    "torch.library": ("torch_internals", "registers or overrides operator kernels"),
    "torch.overrides": ("torch_internals", "overrides torch functions"),
    "torch.utils._python_dispatch": ("torch_internals", "pushes or pops dispatch modes"),
    "torch.utils.cpp_extension": ("native_code", "compiles and loads native code"),
    "torch.utils.dlpack": ("torch_internals", "shares memory past the judge's tensors"),
    "torch.fx": ("torch_internals", "rewrites graphs with PyTorch's compiler"),
    "torch.compile": ("torch_codegen", "generates the kernel with PyTorch's compiler, not Triton"),
    "torch.jit": ("torch_codegen", "compiles with TorchScript"),
    "torch.export": ("torch_codegen", "compiles with PyTorch's exporter"),
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
    "torch.distributed": ("network", "opens connections to other processes"),
    # Process-wide settings that change the judge's numerics.
    "torch.set_default_dtype": ("torch_global_setting", "changes the judge's default dtype"),
    "torch.set_default_device": ("torch_global_setting", "changes the judge's default device"),
    "torch.set_float32_matmul_precision": ("torch_global_setting", "lowers the judge's matmul precision"),
    "torch.set_flush_denormal": ("torch_global_setting", "changes the judge's numerics"),
    "torch.use_deterministic_algorithms": ("torch_global_setting", "changes the judge's kernels"),
    "torch.manual_seed": ("torch_global_setting", "reseeds the generator the judge's inputs come from"),
    "torch.random": ("torch_global_setting", "changes the judge's generator state"),
    # Names of the dispatch-mode classes wherever they are imported from.
    "TorchDispatchMode": ("torch_internals", "records or rewrites every ATen call"),
    "TorchFunctionMode": ("torch_internals", "rewrites every torch function call"),
}

# triton: the public API a kernel uses. Anything else under triton (runtime, compiler, backends,
# knobs, testing) reaches the driver, the compiler cache or process-wide settings.
TRITON_PUBLIC = {"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language",
                 "constexpr", "must_use_result", "OutOfResources"}

# Dunder attributes a kernel may touch: none reach the judge.
ALLOWED_DUNDERS = {"__init__", "__name__", "__len__", "__getitem__"}

# Methods that change the object they are called on (containers, and torch's in-place ops
# ending in "_"): called on a name that outlives the call, they keep state across calls.
MUTATING_METHODS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
                    "setdefault", "add", "discard", "__setitem__", "sort", "reverse"}

MEMO_DECORATORS = {"lru_cache", "cache", "cached_property"}


class Scanner(ast.NodeVisitor):
    def __init__(self, source):
        self.lines = source.splitlines()
        self.findings = []
        self.seen = set()
        self.aliases = {}  # local name -> dotted module path or object path
        self.module_names = set()  # names bound at module level
        self.module_functions = set()
        self.imported = set()  # local names bound by imports (modules and their members)
        self.scopes = []  # stack of sets of names local to the enclosing functions

    # -- helpers ------------------------------------------------------------------------------
    def add(self, node, rule, what, why):
        key = (rule, getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if key in self.seen:
            return
        self.seen.add(key)
        self.findings.append({"rule": rule, "line": getattr(node, "lineno", 0),
                              "col": getattr(node, "col_offset", 0) + 1, "what": what, "why": why})

    def dotted(self, node):
        """The dotted path of a Name/Attribute chain with its root resolved, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id, node.id)
        return ".".join([root] + list(reversed(parts)))

    def root_name(self, node):
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    def is_local(self, name):
        return bool(self.scopes) and name in self.scopes[-1]

    def check_path(self, node, path):
        if path is None:
            return
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in FORBIDDEN_PATHS:
                rule, why = FORBIDDEN_PATHS[prefix]
                self.add(node, rule, prefix, why)
                return
        if parts[-1] in ("TorchDispatchMode", "TorchFunctionMode"):
            rule, why = FORBIDDEN_PATHS[parts[-1]]
            self.add(node, rule, path, why)
            return
        if parts[0] == "torch" and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                       for p in parts[1:]):
            self.add(node, "torch_internals", path,
                     "private PyTorch API (torch._C and the like) reaches dispatch and its recording")
            return
        if parts[0] == "triton" and len(parts) > 1 and parts[1] not in TRITON_PUBLIC:
            self.add(node, "triton_internals", path,
                     "Triton's runtime, compiler, driver and settings are not part of writing a kernel")

    # -- imports ------------------------------------------------------------------------------
    def check_module(self, node, module):
        top = module.split(".")[0]
        if module in FORBIDDEN_MODULES or top in FORBIDDEN_MODULES:
            rule, why = FORBIDDEN_MODULES.get(module, FORBIDDEN_MODULES.get(top))
            self.add(node, rule, "import " + module, why)
            return False
        if module in ALLOWED_MODULES or module.startswith(ALLOWED_MODULE_PREFIXES):
            return True
        if top in ("torch", "triton"):
            # `import torch` already reaches every submodule: a submodule import is judged by
            # the same path rules as an attribute access.
            before = len(self.findings)
            self.check_path(node, module)
            return len(self.findings) == before
        self.add(node, "import_not_allowed", "import " + module,
                 "not a module a kernel needs (allowed: triton, triton.language, torch, math, typing)")
        return False

    def visit_Import(self, node):
        for a in node.names:
            self.check_module(node, a.name)
            local = a.asname or a.name.split(".")[0]
            self.aliases[local] = a.name if a.asname else a.name.split(".")[0]
            self.bind(local, imported=True)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.level:
            self.add(node, "import_not_allowed", "relative import", "a candidate is one module")
            return
        module = node.module or ""
        self.check_module(node, module)
        for a in node.names:
            if a.name == "*":
                self.add(node, "import_not_allowed", "from %s import *" % module,
                         "a star import hides which names the module uses")
                continue
            full = module + "." + a.name
            self.check_path(node, full)
            if a.name in FORBIDDEN_BUILTINS and module == "builtins":
                continue
            if module == "functools" or a.name in MEMO_DECORATORS:
                pass
            local = a.asname or a.name
            self.aliases[local] = full
            self.bind(local, imported=True)

    def bind(self, name, imported=False):
        if self.scopes:
            self.scopes[-1].add(name)
        else:
            self.module_names.add(name)
            if imported:
                self.imported.add(name)

    # -- names, attributes, calls -----------------------------------------------------------
    def visit_Name(self, node):
        if node.id in FORBIDDEN_BUILTINS and node.id not in self.aliases and not self.is_local(node.id):
            rule, why = FORBIDDEN_BUILTINS[node.id]
            self.add(node, rule, node.id, why)
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ALLOWED_DUNDERS:
            self.add(node, "dunder_access", node.id, "reaches interpreter internals (builtins, loader, spec)")
        elif node.id in self.aliases:
            self.check_path(node, self.aliases[node.id])
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ALLOWED_DUNDERS:
            self.add(node, "dunder_access", "." + node.attr,
                     "reaches objects past their API (__dict__, __class__, __globals__, __subclasses__, __code__)")
        self.check_path(node, self.dotted(node))
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else None
        if name in ("getattr", "setattr", "delattr", "hasattr") and not self.is_local(name):
            attr = node.args[1] if len(node.args) > 1 else None
            if name in ("setattr", "delattr"):
                self.add(node, "attribute_write", name + "()", "changes objects by name (monkeypatching)")
            elif not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                self.add(node, "dynamic_attribute", name + "() with a computed name",
                         "reaches attributes the scan cannot see")
            else:
                val = attr.value
                if val.startswith("__") and val.endswith("__") and val not in ALLOWED_DUNDERS:
                    self.add(node, "dunder_access", "%s(..., %r)" % (name, val),
                             "reaches objects past their API")
                target = self.dotted(node.args[0]) if node.args else None
                if target:
                    self.check_path(node, target + "." + val)
        if isinstance(f, ast.Attribute) and self.scopes:
            root = self.root_name(f.value)
            if root and not self.is_local(root) and root not in self.imported and \
                    (f.attr in MUTATING_METHODS or (f.attr.endswith("_") and not f.attr.startswith("_"))):
                self.add(node, "nonlocal_state_mutation", "%s.%s()" % (root, f.attr),
                         "changes state that outlives the call (a cache keyed by data_ptr or call count)")
        self.generic_visit(node)

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
            self.add(node, "module_attribute_write", "%s = ..." % self.dotted(target),
                     "monkeypatches a module the judge also uses (torch, triton, math)")
        elif root in self.module_functions:
            self.add(node, "function_attribute", "%s.%s" % (root, "..."),
                     "keeps state on a function object across calls")
        elif self.scopes and not self.is_local(root):
            self.add(node, "nonlocal_state_mutation", "%s[...] / %s.attr = ..." % (root, root),
                     "changes state that outlives the call (a cache keyed by data_ptr or call count)")

    def visit_Assign(self, node):
        self.visit(node.value)
        for t in node.targets:
            self.check_target(node, t)
            if not isinstance(t, ast.Name):
                self.visit(t)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            if self.scopes and not self.is_local(node.target.id):
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

    def visit_Global(self, node):
        self.add(node, "global_state", "global " + ", ".join(node.names),
                 "module state written from a function outlives the call (caches, counters)")

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
        if not self.scopes:
            self.module_functions.add(node.name)
        self.bind(node.name)
        local = set()
        for arg in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else []) + \
                ([a.kwarg] if a.kwarg else []):
            local.add(arg.arg)
        # Names assigned anywhere in this function's own body are local (Python's rule).
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
                local.add(sub.name)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                for al in sub.names:
                    local.add(al.asname or al.name.split(".")[0])
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Global, ast.Nonlocal)):
                local.difference_update(sub.names)
        self.scopes.append(local)
        for stmt in node.body:
            self.visit(stmt)
        self.scopes.pop()

    def visit_FunctionDef(self, node):
        self.function(node)

    def visit_AsyncFunctionDef(self, node):
        self.function(node)

    def visit_Lambda(self, node):
        self.scopes.append({a.arg for a in node.args.args} | (self.scopes[-1] if self.scopes else set()))
        self.visit(node.body)
        self.scopes.pop()

    def visit_ClassDef(self, node):
        for b in node.bases:
            path = self.dotted(b) or ""
            if path in ("torch.Tensor", "torch._C.TensorBase", "torch.nn.Parameter"):
                self.add(b, "tensor_subclass", "class %s(%s)" % (node.name, path),
                         "a tensor subclass can answer the judge's comparisons itself")
        self.bind(node.name)
        self.generic_visit(node)


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
    s = Scanner(source)
    s.visit(tree)
    out["findings"] = sorted(s.findings, key=lambda f: (f["line"], f["col"], f["rule"]))
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: python3 -I ast_scan.py KERNEL.py\n")
        return 2
    try:
        with open(argv[1], "rb") as f:
            data = f.read()
        source = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        sys.stderr.write("ast_scan: %s: %s\n" % (argv[1], e))
        return 2
    sys.stdout.write(json.dumps(scan_source(source, argv[1])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
