#!/usr/bin/env python3
"""Tables people load (issue 40 §4): a tiny `kforge eval` (two kforge-core tasks of the cpu
exemplars at --profile ci, and one sample that does not compile), then
  - attempts.jsonl writes a speedup that was not measured as null (not 0.0);
  - `kforge export RUN --format csv`: the columns of python/kforge's COLUMNS, one row per attempt;
  - `kforge.load_run(RUN)`: the same columns, nullable dtypes, nulls where nothing was measured,
    a mean speedup over the passes alone, equal to the CSV's cells;
  - `kforge export RUN --format parquet` read back by pandas equals load_run;
  - kforge.load_summary(RUN) is the run's summary.json;
  - an attempts.jsonl of the old form (0.0 for not measured) reads the same, in C++ and Python.
Exit 77 (skipped) without pandas and pyarrow in this interpreter.

usage: check_tables.py KFORGE SOURCE_DIR SCRATCH_DIR   (run with the torch venv)
"""
import csv
import io
import json
import math
import os
import shutil
import sys

from kforge_check import check, runner

KFORGE, SRC, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(SRC, "python"))
try:
    import pandas as pd
    import pyarrow  # noqa: F401
except ImportError as e:
    print("SKIP: pandas and pyarrow are not installed in %s (%s): scripts/install-deps installs them"
          % (sys.executable, e))
    sys.exit(77)
import kforge  # noqa: E402

env = dict(os.environ, KFORGE_HOME=SRC)
run_kforge = runner(KFORGE, env, stdout_tail=3000, stderr_tail=3000)
shutil.rmtree(OUT, ignore_errors=True)
kernels = os.path.join(OUT, "kernels")
for task in ("math/horner_polynomial", "activation/gelu_tanh"):
    shutil.copytree(os.path.join(SRC, "prompts", "exemplars", "cpu", task), os.path.join(kernels, task, "0"))
os.makedirs(os.path.join(kernels, "math/horner_polynomial", "1"))
open(os.path.join(kernels, "math/horner_polynomial", "1", "kernel.cpp"), "w").write("this is not C++\n")
run = os.path.join(OUT, "run")
p = run_kforge("eval", "--suite", "kforge-core", "--profile", "ci", "--backend", "cpu", "--kernels", kernels,
               "--out", run, "--reps", "5", "--profiler", "none")
recs = [json.loads(line) for line in open(os.path.join(run, "attempts.jsonl"))]
check(p.returncode == 0 and len(recs) == 3 and sorted(r["outcome"] for r in recs) == ["compile_error", "pass", "pass"],
      "eval: 2 exemplars pass, the broken sample is a compile_error")
bad = [r for r in recs if r["outcome"] != "pass"][0]
check(bad["speedup"] is None and bad["t_candidate_ms"] is None and "speedup" in bad,
      "attempts.jsonl: a speedup and time not measured are null, not 0.0")

x = run_kforge("export", run, "--format", "csv", "--out", os.path.join(OUT, "run.csv"))
rows = list(csv.reader(open(os.path.join(OUT, "run.csv"), newline="")))
names = [n for n, _ in kforge.COLUMNS]
check(x.returncode == 0 and rows[0] == names and len(rows) == 4,
      "kforge export --format csv: kforge.COLUMNS' %d columns, one row per attempt" % len(names))
for must in ("task", "sample", "turn", "outcome", "sub_kind", "t_candidate_ms", "t_reference_ms", "speedup"):
    check(must in names, "column %s" % must)

df = kforge.load_run(run)
check(list(df.columns) == names and len(df) == 3, "load_run: the same columns in the same order, 3 rows")
kinds = dict(kforge.COLUMNS)
want = {"text": "string", "integer": "Int64", "real": "float64", "boolean": "boolean"}
check(all(str(df[n].dtype) == want[kinds[n]] for n in names),
      "load_run: dtypes string / Int64 / float64 / boolean by column type")
failed = df[df.outcome != "pass"].iloc[0]
passed = df[df.outcome == "pass"]
check(math.isnan(failed.speedup) and math.isnan(failed.t_candidate_ms) and failed.trials == 0
      and math.isnan(failed.max_abs_err) and not failed.speedup_credited,
      "load_run: nulls (NaN) for what the failure did not measure")
check((passed.speedup > 0).all() and (passed.t_candidate_ms > 0).all(), "load_run: the passes carry their times")
mean = df.speedup.mean()
check(abs(mean - passed.speedup.sum() / 2) < 1e-12, "df.speedup.mean() is the mean over the passes (%.3f)" % mean)
csv_df = pd.read_csv(io.StringIO(open(os.path.join(OUT, "run.csv")).read()))
check(all((pd.isna(a) and pd.isna(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a))
          for col in ("speedup", "t_candidate_ms", "t_reference_ms", "max_abs_err")
          for a, b in zip(csv_df[col], df[col])), "the CSV's cells equal load_run's (nulls included)")

pq = os.path.join(OUT, "run.parquet")
x = run_kforge("export", run, "--format", "parquet", "--out", pq)
back = pd.read_parquet(pq) if os.path.isfile(pq) else None
check(x.returncode == 0 and back is not None and list(back.columns) == names
      and back.astype(object).where(back.notna(), None).equals(df.astype(object).where(df.notna(), None)),
      "kforge export --format parquet: read back by pandas, equal to load_run")

run_kforge("report", run)
summary = kforge.load_summary(run)
check(isinstance(summary, dict) and summary == json.load(open(os.path.join(run, "summary.json"))),
      "load_summary: summary.json as a dict")

old = os.path.join(OUT, "old")
os.makedirs(old)
shutil.copy(os.path.join(run, "manifest.json"), old)
with open(os.path.join(old, "attempts.jsonl"), "w") as f:
    for r in recs:
        f.write(json.dumps({k: (0.0 if v is None and k not in ("judge_timing",) else v) for k, v in r.items()}) + "\n")
x = run_kforge("export", old, "--format", "csv", "--out", "-")
check(x.returncode == 0 and x.stdout == open(os.path.join(OUT, "run.csv")).read(),
      "an old attempts.jsonl (0.0 for not measured) exports the same table")
check(kforge.load_run(old).speedup.isna().sum() == 1, "load_run reads the old form's 0.0 as null")
x = run_kforge("export", os.path.join(OUT, "nowhere"))
check(x.returncode == 2 and "no attempts.jsonl" in x.stderr, "kforge export on a directory that is not a run: exit 2")
print("tables: all checks passed")
