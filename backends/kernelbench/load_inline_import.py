"""Turns one KernelBench generation (a `ModelNew` whose kernels are built by
torch.utils.cpp_extension.load_inline) into a kforge cuda candidate (issue 23 section 1).

usage: python3 -I -B load_inline_import.py GENERATION.py SHIM.cuh

Reads the file with Python's own parser and never runs it. Prints one JSON object:
  {"ok": true, "kernel": "<kernel.cu text>", "function": NAME, "notes": [...]}
or
  {"ok": false, "reason": "<why the file cannot be imported>", "line": N}

Self-contained means: the load_inline call's cuda_sources / cpp_sources are string literals
(or names bound once at module level to string literals, lists of them, or `+` of them), its
`functions` is a list of literal names, and ModelNew.forward only returns one of those
functions called on forward's own arguments (optionally `.contiguous()`) and numbers. The
kernel.cu is the shim (torch_shim.cuh), the CUDA sources, the C++ sources, then a kf_forward
that calls the function with the task's inputs in forward's order. Standard library only.
"""
import ast
import json
import re
import sys


class NotSelfContained(Exception):
    def __init__(self, reason, node=None):
        super().__init__(reason)
        self.reason = reason
        self.line = getattr(node, "lineno", 0) if node is not None else 0


def module_strings(tree):
    """Module-level names bound exactly once by `NAME = <expr>`: name -> expr."""
    bound, seen = {}, {}
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets if isinstance(t, ast.Name)]
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets = [node.target]
            value = node.value
        for t in targets:
            seen[t.id] = seen.get(t.id, 0) + 1
            bound[t.id] = value
    # Augmented assignments (src += ...) make a name's value depend on the order of execution.
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            seen[node.target.id] = seen.get(node.target.id, 0) + 2
    return {k: v for k, v in bound.items() if seen[k] == 1}


def literal_text(node, names, what, depth=0):
    """The text of a source argument: str literals, names of them, lists and `+`."""
    if depth > 20:
        raise NotSelfContained("%s is nested too deeply" % what, node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return literal_text(names[node.id], names, what, depth + 1)
    if isinstance(node, (ast.List, ast.Tuple)):
        return "\n".join(literal_text(e, names, what, depth + 1) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return literal_text(node.left, names, what, depth + 1) + literal_text(node.right, names, what, depth + 1)
    if isinstance(node, ast.JoinedStr):
        raise NotSelfContained("%s is an f-string: its text is built when the file runs" % what, node)
    if isinstance(node, ast.Name):
        raise NotSelfContained("%s names `%s`, which is not a string literal bound once at module level"
                               % (what, node.id), node)
    raise NotSelfContained("%s is built when the file runs (%s), not a string literal"
                           % (what, type(node).__name__), node)


def is_load_inline(call):
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "load_inline") or (
        isinstance(f, ast.Attribute) and f.attr == "load_inline")


def load_inline_modules(tree, names):
    """Module-level `NAME = load_inline(...)`: name -> call."""
    mods = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and is_load_inline(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    mods[t.id] = node.value
    return mods


def find_class(tree, name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def method(cls, name):
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def self_aliases(cls):
    """`self.X = NAME` in __init__: X -> NAME."""
    init = method(cls, "__init__")
    out = {}
    if init is None:
        return out
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    out[t.attr] = node.value.id
    return out


def forward_call(cls, mods):
    """The load_inline module, the function and the call node forward returns."""
    fwd = method(cls, "forward")
    if fwd is None:
        raise NotSelfContained("ModelNew has no forward method", cls)
    body = [s for s in fwd.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        raise NotSelfContained("ModelNew.forward does more than return one call of a load_inline function "
                               "(other PyTorch code would run outside the kernel)", fwd)
    call = body[0].value
    f = call.func
    if not isinstance(f, ast.Attribute):
        raise NotSelfContained("ModelNew.forward returns a call of `%s`, not of a load_inline module's function"
                               % ast.unparse(f), call)
    owner = f.value
    aliases = self_aliases(cls)
    mod = None
    if isinstance(owner, ast.Name) and owner.id in mods:
        mod = owner.id
    elif (isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self"
          and aliases.get(owner.attr) in mods):
        mod = aliases[owner.attr]
    if mod is None:
        raise NotSelfContained("ModelNew.forward calls `%s`, which is not a module built by load_inline at "
                               "module level" % ast.unparse(f), call)
    return fwd, mod, f.attr, call


def cpp_arguments(fwd, call):
    """C++ argument expressions: forward's parameters become inputs, numbers stay numbers."""
    params = [a.arg for a in fwd.args.args[1:]]
    if fwd.args.vararg or fwd.args.kwarg or fwd.args.kwonlyargs:
        raise NotSelfContained("ModelNew.forward takes *args/**kwargs or keyword-only arguments", fwd)
    if call.keywords:
        raise NotSelfContained("the call passes keyword arguments", call)
    out = []
    for i, a in enumerate(call.args):
        # x.contiguous(): the runner's inputs are contiguous already.
        if (isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "contiguous"
                and not a.args):
            a = a.func.value
        if isinstance(a, ast.Name) and a.id in params:
            out.append("call.in(%d)" % params.index(a.id))
        elif isinstance(a, ast.Constant) and isinstance(a.value, bool):
            out.append("true" if a.value else "false")
        elif isinstance(a, ast.Constant) and isinstance(a.value, (int, float)):
            out.append(repr(a.value))
        elif (isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant)
              and isinstance(a.operand.value, (int, float)) and not isinstance(a.operand.value, bool)):
            out.append("-" + repr(a.operand.value))
        else:
            raise NotSelfContained("argument %d of the call (`%s`) is neither one of forward's inputs nor a "
                                   "number (parameters and computed values are not imported)"
                                   % (i + 1, ast.unparse(a)), a)
    return out


TORCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch|ATen|c10|pybind11)/[^>"]*[>"][^\n]*$', re.M)


def clean(src, what):
    for marker in ("PYBIND11_MODULE", "TORCH_LIBRARY"):
        if marker in src:
            raise NotSelfContained("%s defines its own Python bindings (%s)" % (what, marker))
    return TORCH_INCLUDE.sub(lambda m: "// (kforge import) " + m.group(0).strip(), src)


def keyword(call, name, positional=None):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return (positional or {}).get(name)


def convert(text, shim):
    tree = ast.parse(text)
    names = module_strings(tree)
    mods = load_inline_modules(tree, names)
    if not mods:
        raise NotSelfContained("no module-level `NAME = load_inline(...)`")
    cls = find_class(tree, "ModelNew")
    if cls is None:
        raise NotSelfContained("no class ModelNew")
    fwd, mod, fn, call = forward_call(cls, mods)
    li = mods[mod]
    # load_inline(name, cpp_sources, cuda_sources=None, ...): later positions moved between torch
    # versions (sycl_sources), so only these three are read by position.
    if len(li.args) > 3:
        raise NotSelfContained("load_inline is called with more than three positional arguments", li)
    positional = dict(zip(("name", "cpp_sources", "cuda_sources"), li.args))
    for k in ("extra_include_paths", "extra_ldflags"):
        v = keyword(li, k)
        if v is not None and literal_text(v, names, k).strip():
            raise NotSelfContained("load_inline's %s is not empty (headers or libraries outside the source)" % k, li)
    notes = []
    flags = keyword(li, "extra_cuda_cflags")
    if flags is not None:
        notes.append("extra_cuda_cflags not applied (kforge's nvcc flags): " + ast.unparse(flags))
    cuda_node = keyword(li, "cuda_sources", positional)
    cpp_node = keyword(li, "cpp_sources", positional)
    fns_node = keyword(li, "functions")
    if cuda_node is None:
        raise NotSelfContained("load_inline has no cuda_sources (a C++-only extension is not a CUDA candidate)", li)
    cuda = clean(literal_text(cuda_node, names, "cuda_sources"), "cuda_sources")
    cpp = clean(literal_text(cpp_node, names, "cpp_sources"), "cpp_sources") if cpp_node is not None else ""
    if fns_node is None:
        raise NotSelfContained("load_inline has no functions= list", li)
    if isinstance(fns_node, ast.Name) and fns_node.id in names:
        fns_node = names[fns_node.id]
    if not isinstance(fns_node, (ast.List, ast.Tuple)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in fns_node.elts):
        raise NotSelfContained("functions= is not a list of names", fns_node)
    functions = [e.value for e in fns_node.elts]
    if fn not in functions:
        raise NotSelfContained("forward calls `%s`, which is not in load_inline's functions %s" % (fn, functions), call)
    args = cpp_arguments(fwd, call)
    kernel = "\n".join([
        "// Imported by `kforge import-kernelbench` from a KernelBench generation (load_inline).",
        "// The kforge torch shim, then the generation's cuda_sources and cpp_sources, then kf_forward.",
        shim,
        "// ---- cuda_sources ----",
        cuda,
        "// ---- cpp_sources ----",
        cpp,
        "// ---- kf_forward: ModelNew.forward returned %s ----" % ast.unparse(call),
        "extern \"C\" int kf_forward(const kf_tensor* inputs, int n_inputs, kf_tensor* outputs, int n_outputs,",
        "                            void* stream) {",
        "  kforge_shim::Call call(inputs, n_inputs, outputs, n_outputs, stream);",
        "  return call.run([&] { return %s(%s); });" % (fn, ", ".join(args)),
        "}",
        "",
    ])
    return {"ok": True, "kernel": kernel, "function": fn, "notes": notes}


def main():
    if len(sys.argv) != 3:
        print("usage: load_inline_import.py GENERATION.py SHIM.cuh", file=sys.stderr)
        return 2
    with open(sys.argv[2], encoding="utf-8") as f:
        shim = f.read()
    try:
        with open(sys.argv[1], "rb") as f:
            text = f.read().decode("utf-8")
        out = convert(text, shim)
    except NotSelfContained as e:
        out = {"ok": False, "reason": e.reason, "line": e.line}
    except SyntaxError as e:
        out = {"ok": False, "reason": "not valid Python: %s" % e.msg, "line": e.lineno or 0}
    except UnicodeDecodeError as e:
        out = {"ok": False, "reason": "not UTF-8 text (%s)" % e.reason, "line": 0}
    print(json.dumps(out, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
