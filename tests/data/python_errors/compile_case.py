# Compiles kernel.py's `kernel` for an sm_80 target (no GPU needed: the error is raised while lowering to TTIR).
import importlib.util, triton
from triton.backends.compiler import GPUTarget
spec = importlib.util.spec_from_file_location("candidate", "kernel.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)


def kf_forward(*inputs):
    src = triton.compiler.ASTSource(fn=m.kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    triton.compile(src, target=GPUTarget("cuda", 80, 32))


kf_forward()
