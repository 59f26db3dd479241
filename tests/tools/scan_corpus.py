#!/usr/bin/env python3
"""Runs kforge's Triton static scan (backends/triton/ast_scan.py) over TritonBench's own code.

Usage: python3 tests/tools/scan_corpus.py TRITONBENCH_CHECKOUT [--json OUT.json] [--show N]

The corpus (issue 22 §1), all read from a TritonBench checkout outside this repository:
  G gold  data/TritonBench_G_v1/*.py, the implementation above the 146-'#' separator line (the
          part a gold-as-candidate run hands to the scan; the test block is the judge's).
  T LLM   LLM_generated/Bench_T_general_purpose/output_<model>.jsonl, the zero-shot (non-rag)
          generations of the five models, field `predict` (the last ```python fence when the
          reply has fences; cut at a separator line when it has one).
Prints, per corpus, the files rejected and per rule how many files it rejects, with the first
findings of each; writes every file's findings as JSON with --json. Run it with the interpreter
that has torch and triton (the scan resolves attribute chains against them).
"""

import argparse
import collections
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "backends", "triton"))
import ast_scan  # noqa: E402

sys.path.insert(0, HERE)
from tritonbench_text import code_of_reply, implementation  # noqa: E402

MODELS = ["DeepSeek-R1", "Qwen2.5-72B-Instruct", "claude-3-5-sonnet-20240620", "gpt-4o", "o1-2024-12-17"]


def corpus(checkout):
    for path in sorted(glob.glob(os.path.join(checkout, "data", "TritonBench_G_v1", "*.py"))):
        with open(path, encoding="utf-8") as f:
            yield "G gold", os.path.basename(path), implementation(f.read())
    for model in MODELS:
        path = os.path.join(checkout, "LLM_generated", "Bench_T_general_purpose", "output_%s.jsonl" % model)
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                yield "T " + model, "%s#%03d" % (model, i), code_of_reply(json.loads(line)["predict"])


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout")
    ap.add_argument("--json")
    ap.add_argument("--show", type=int, default=3, help="example findings printed per rule")
    a = ap.parse_args(argv)
    results = []
    for group, name, source in corpus(a.checkout):
        out = ast_scan.scan_source(source, name)
        results.append({"corpus": group, "file": name, "syntax_error": out["syntax_error"],
                        "findings": out["findings"]})
    groups = collections.OrderedDict()
    for r in results:
        groups.setdefault(r["corpus"], []).append(r)
    if hasattr(ast_scan, "resolution_status"):
        print("resolution against installed torch/triton: %s" % ast_scan.resolution_status())
    for group, rs in groups.items():
        rejected = [r for r in rs if r["findings"]]
        syntax = [r for r in rs if r["syntax_error"]]
        print("\n== %s: %d files, %d rejected by a rule, %d syntax errors" %
              (group, len(rs), len(rejected), len(syntax)))
        per_rule = collections.OrderedDict()
        for r in rejected:
            for rule in sorted({f["rule"] for f in r["findings"]}):
                per_rule.setdefault(rule, []).append(r)
        for rule, files in sorted(per_rule.items(), key=lambda kv: -len(kv[1])):
            print("  %-26s %4d files" % (rule, len(files)))
            for r in files[:a.show]:
                f = next(f for f in r["findings"] if f["rule"] == rule)
                print("      %s:%d: %s" % (r["file"], f["line"], f["what"]))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
