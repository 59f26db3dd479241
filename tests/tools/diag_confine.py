"""Diagnoses libkforge_pyconfine.so in a Python process that has torch's CUDA context:
python3 diag_confine.py LIB DEVICE SCRATCH(0|1). Prints what kf_py_confine returned."""
import ctypes, faulthandler, sys, tempfile
faulthandler.enable()
import torch
dev, with_scratch = int(sys.argv[2]), sys.argv[3] == "1"
if dev >= 0:
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
d = tempfile.mkdtemp() if with_scratch else ""
lib = ctypes.CDLL(sys.argv[1])
lib.kf_py_confine.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
err = ctypes.create_string_buffer(1024)
print("confine ->", lib.kf_py_confine(dev, d.encode(), err, 1024), err.value, flush=True)
if dev >= 0:
    print((torch.ones(4, device="cuda") * 2).sum().item(), flush=True)
