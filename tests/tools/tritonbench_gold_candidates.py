#!/usr/bin/env python3
"""Writes TritonBench-G's gold implementations as kforge candidates: OUT/G/<name>/kernel.py is the
part of data/TritonBench_G_v1/<name>.py above its 146-'#' separator line (the test block stays the
judge's). `kforge eval --suite CHECKOUT --backend triton --kernels OUT` then judges each gold
against itself: every G task should pass or be listed unusable (a reference that raises, or a gold
that disagrees with itself: issue 22 §2), never a mismatch.

Usage: python3 tests/tools/tritonbench_gold_candidates.py CHECKOUT OUT [NAME ...]
(NAME: only these tasks, without the .py). Prints how many it wrote.
"""
import glob
import os
import sys

SEPARATOR = "#" * 146


def implementation(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip() == SEPARATOR:
            return "\n".join(lines[:i]) + "\n"
    return None


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    checkout, out, names = argv[1], argv[2], set(argv[3:])
    written = 0
    for path in sorted(glob.glob(os.path.join(checkout, "data", "TritonBench_G_v1", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if names and name not in names:
            continue
        with open(path, encoding="utf-8") as f:
            impl = implementation(f.read())
        if impl is None:
            continue
        os.makedirs(os.path.join(out, "G", name), exist_ok=True)
        with open(os.path.join(out, "G", name, "kernel.py"), "w", encoding="utf-8") as f:
            f.write(impl)
        written += 1
    print("wrote %d gold candidate(s) under %s" % (written, os.path.join(out, "G")))


if __name__ == "__main__":
    main(sys.argv)
