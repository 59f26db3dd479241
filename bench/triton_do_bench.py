"""triton.testing.do_bench of a Triton candidate's kf_forward, outside the judge (bench_timing's
triton case). Usage: triton_do_bench.py REFERENCE.py CANDIDATE.py [SEED]

The inputs are the reference's get_inputs() on cuda:0, then the parameters and buffers of
Model(*get_init_inputs()): the C ABI's order, as the judge passes them. Prints one JSON line:
{"ms": median of do_bench (ms), "warmup_ms": 25, "rep_ms": 100, "batch_ms": ...}. do_bench flushes
the L2 before every call and times with CUDA events (triton/testing.py); batch_ms is the judge's
method in this one process (16 sets of inputs, the calls back to back, the host's clock around the
batch and a device synchronisation): the two together tell the judge's own cost from the method's."""
import importlib.util
import json
import sys
import time

import torch
import triton.testing


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ref, cand = load(sys.argv[1], "kf_reference"), load(sys.argv[2], "kf_candidate")
    torch.manual_seed(int(sys.argv[3]) if len(sys.argv) > 3 else 2000)
    model = ref.Model(*ref.get_init_inputs()).cuda()
    args = [x.cuda() if torch.is_tensor(x) else x for x in ref.get_inputs()]
    args += [p.detach() for p in model.parameters()] + list(model.buffers())
    with torch.no_grad():
        ms = triton.testing.do_bench(lambda: cand.kf_forward(*args), warmup=25, rep=100, return_mode="median")
        sets = [[x.clone() if torch.is_tensor(x) else x for x in args] for _ in range(16)]
        per_call = []
        for batch in range(60):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            outs = [cand.kf_forward(*s) for s in sets]
            torch.cuda.synchronize()
            if batch >= 10:
                per_call.append((time.perf_counter() - t0) * 1e3 / len(sets))
            del outs
        per_call.sort()
    print(json.dumps({"ms": ms, "warmup_ms": 25, "rep_ms": 100, "batch_ms": per_call[len(per_call) // 2]}))


if __name__ == "__main__":
    main()
