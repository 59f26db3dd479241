#!/usr/bin/env python3
"""ctest testblock_gold_agreement: the gold-agreement rules of backends/triton/testblock.py on
made-up runs of a gold (no test block, no Triton): which elements a candidate is compared on,
which results race, and when a task is unjudgeable (docs/ARCHITECTURE.md, TritonBench gold
agreement). Exit 0 when every case holds; each failure is printed."""
import importlib.util
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "testblock", os.path.join(HERE, "..", "..", "backends", "triton", "testblock.py"))
tb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tb)

failures = []


def expect(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


a = torch.arange(8, dtype=torch.float32)
b = torch.arange(4, dtype=torch.float32) * 10
unwritten = a.clone()
unwritten[6:] = -1.0  # the second poison shows in two elements: unwritten memory

# Two runs that agree: no mask, nothing more to run.
masks, why = tb.gold_agreement([a, b, "passed"], [a.clone(), b.clone(), "passed"], torch)
expect("agreeing runs: every element compared", masks == [None, None] and why == "")

# Unwritten elements: the mask keeps the six the gold writes.
masks, why = tb.gold_agreement([a, b], [unwritten, b.clone()], torch)
expect("unwritten memory: compared on 6 of 8", why == "" and masks[1] is None and int(masks[0].sum()) == 6)

# The third of RACE_RUNS runs with the first run's poison differs in result 0: it races and is
# compared on nothing, result 1 keeps its mask.
raced = a.clone()
raced[2] += 1.0
again = [[a.clone(), b.clone()], [a.clone(), b.clone()], [raced, b.clone()]]
out, why = tb.without_racing_results([a, b], again, masks, torch)
expect("a race seen only in the last run: result 0 on nothing",
       why == "" and int(out[0].sum()) == 0 and out[1] is None)

# Runs with the first poison that all agree: the unwritten mask stands.
out, why = tb.without_racing_results([a, b], [[a.clone(), b.clone()]] * 3, masks, torch)
expect("no race: the unwritten mask stands", why == "" and int(out[0].sum()) == 6)

# Every tensor result races (in different runs): the task is unjudgeable, with the results named.
raced_b = b.clone()
raced_b[0] += 1.0
again = [[raced, b.clone(), "passed"], [a.clone(), raced_b, "passed"]]
out, why = tb.without_racing_results([a, b, "passed"], again, [masks[0], None], torch)
expect("every result races: unjudgeable, naming results 0, 1", out == [] and "results 0, 1" in why)

# Fewer than half the elements agreeing is unjudgeable at gold_agreement already.
masks, why = tb.gold_agreement([a], [a * 0 - 5], torch)
expect("most elements differ: unjudgeable", masks == [] and "differ between two runs" in why)

sys.exit(1 if failures else 0)
